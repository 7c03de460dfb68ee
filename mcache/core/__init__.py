"""Pure-Python core: specs, buffer declarations, the estimator and capacity planning.

Nothing here imports torch; the cache manager (which does) lives in `mcache.core.manager`.
"""
