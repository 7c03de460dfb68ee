"""Layer kinds, one module each; `KIND_MODULES` maps a kind name to its module."""

from __future__ import annotations

from mcache.core.kinds import attention, gdn, kda, lightning, mamba1, mamba2, mla, mlp, moe, short_conv

KIND_MODULES = {m.NAME: m for m in (attention, mla, mamba1, mamba2, gdn, kda, short_conv, lightning, mlp, moe)}
RECURRENT_KINDS = ("mamba1", "mamba2", "gdn", "kda", "short_conv", "lightning")
