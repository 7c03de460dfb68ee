"""Spec-declared auxiliary buffers (and buffers of any other registered estimator).

Their meaning is the model's, so the manager gives them the generic treatment: per-slot ones are
zeroed on first use and moved with the slot; per-request, per-token, per-snapshot and per-rank ones are
allocated and exposed through `views` only.
"""

from __future__ import annotations

from mcache.cache.states.base import StateKind


class AuxState(StateKind):
    """The auxiliary pools of one layer kind (or of the rank, `kind=None`)."""
