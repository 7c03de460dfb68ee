"""The cache manager: the rank's pools as torch tensors, slot and block free lists, and per-kind state
behaviour. Everything that needs torch lives here; sizing (`mcache.core`'s other modules, the engine
profiles) never imports this package."""
