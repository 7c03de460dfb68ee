"""mcache: size and benchmark the caches of hybrid LLMs."""

__version__ = "0.1.0"
