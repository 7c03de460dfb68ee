"""Attention and MLA: paged KV pools. Blocks belong to requests, not slots, so slot operations skip them."""

from __future__ import annotations

from mcache.cache.states import register
from mcache.cache.states.base import StateKind


@register("attention", "sliding_attention", "mla")
class PagedKV(StateKind):
    """KV pools `[L, blocks, block, *shape]`; the manager's block tables say which blocks a request holds.

    `views(layer)` gives `name -> [blocks, block, *shape]`. Reset, relocation, commit and snapshots do
    nothing here: a slot move leaves the blocks where they are, and the block tables travel with the request.
    """
