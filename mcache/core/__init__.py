"""Pure-Python core: specs, buffer declarations, the estimator and capacity planning.

Sizing imports no torch; only the cache manager does (`manager.py`, `pools.py` and `states/`).
"""
