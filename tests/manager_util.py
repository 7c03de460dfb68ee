"""Tiny inline specs and helpers shared by the cache-manager tests."""

from __future__ import annotations

import torch

from mcache.cache.manager import CacheManager
from mcache.core.kinds.base import Role
from mcache.core.load import parse_spec
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig

# Every recurrent kind once, two KV kinds, odd dims; heads and channels split over TP 1/2/4.
# Mamba2 has 2 groups, so TP 4 replicates them (two ranks hold each group). The attention layer has an indexer (its
# keys a row per 2 tokens, whole on every rank, and a raw-key ring a slot); the GDN layer a PLE (a dilated conv window
# over 2 streams, whole on every rank) and hyper-connections (weights only); the MLA layer a DSA indexer (its keys 132
# bytes a row per 2 tokens, whole on every rank, and a tail of raw keys and gate scores a slot) and mHC (weights only).
ALL_KINDS = """
name: tiny-all
source: test
hidden_size: 12
vocab_size: 100
num_layers: 9
dtype: float32
layers: {types: [mamba2, attention+indexer, gdn+ple+hc, kda, mamba1, short_conv, lightning, mla+dsa_indexer+mhc, mamba2]}
attention: {num_heads: 4, num_kv_heads: 2, head_dim: 6}
indexer: {num_heads: 2, head_dim: 4, compress: 2}
ple: {streams: 2, conv_kernel: 4, dilation: 3, embed_dim: 4, embedding_rows: 10, embedding_dim: 2}
hc: {streams: 2, lowrank: 3}
dsa_indexer: {num_heads: 2, head_dim: 128, q_rank: 4, kpool: 2, compress: true}
mhc: {streams: 2}
mla: {num_heads: 4, kv_lora_rank: 6, qk_rope_head_dim: 2, qk_nope_head_dim: 4, v_head_dim: 4}
mamba2: {num_heads: 4, head_dim: 3, state_size: 5, n_groups: 2, conv_kernel: 4}
gdn: {num_k_heads: 4, num_v_heads: 8, k_head_dim: 3, v_head_dim: 5}
kda: {num_heads: 4, head_dim: 3}
mamba1: {intermediate_size: 8, state_size: 3}
short_conv: {conv_kernel: 3}
lightning: {num_heads: 4, head_dim: 3}
aux_buffers:
  - {name: extra, shape: [3, "mamba2.num_heads // tp"], dtype: float32, per: slot, layer_kind: mamba2}
  - {name: step_counter, shape: [2], dtype: int32, per: rank}
"""

# Small enough for thousands of random operations: Mamba2 + windowed attention + short conv, bf16 conv.
SMALL = """
name: tiny-small
source: test
hidden_size: 6
vocab_size: 100
num_layers: 4
dtype: bfloat16
ssm_dtype: float32
layers: {types: [mamba2, attention, short_conv, mamba2]}
attention: {num_heads: 2, num_kv_heads: 2, head_dim: 4, sliding_window: 10}
mamba2: {num_heads: 2, head_dim: 3, state_size: 2, n_groups: 1, conv_kernel: 3}
short_conv: {conv_kernel: 3}
aux_buffers:
  - {name: extra, shape: [2], dtype: int32, per: slot}
"""


def scheme_runtime(scheme: str, **runtime) -> dict:
    """`make` keywords for speculative `scheme`: 2 draft tokens (none for "none"), 2 snapshot slots, and `runtime`."""
    return dict(draft_tokens=0 if scheme == "none" else 2, spec_scheme=scheme, snapshot_slots=2, **runtime)


def spec_of(text: str):
    return parse_spec(text, "<inline>")


def make(
    text: str = ALL_KINDS,
    *,
    tp: int = 1,
    tp_rank: int = 0,
    pp: int = 1,
    stage: int = 0,
    attention_dp: bool = False,
    pool_layout: str = "layer",
    pp_partition=None,
    device: str = "cpu",
    **runtime,
) -> CacheManager:
    """A CPU manager of a tiny spec; `runtime` are `RuntimeConfig` fields (small defaults)."""
    runtime.setdefault("max_batch", 3)
    runtime.setdefault("max_seq_len", 64)
    runtime.setdefault("tokens_per_block", 4)
    if runtime.get("draft_tokens") and "spec_scheme" not in runtime:
        runtime["spec_scheme"] = "intermediate"
    layout = ParallelLayout(tp=tp, pp=pp, attention_dp=attention_dp, pp_partition=pp_partition)
    return CacheManager.build(
        spec_of(text), layout, RuntimeConfig(**runtime), stage=stage, tp_rank=tp_rank, pool_layout=pool_layout, device=device
    )


def fill(mgr: CacheManager, value: float = float("nan")) -> None:
    """Fill every pool with a sentinel (NaN for floats, -7 for integers), as fresh GPU memory might be."""
    for pool in mgr.pools.values():
        if pool.storage.dtype.is_floating_point:
            pool.storage.fill_(value)
        else:
            pool.storage.fill_(-7)


def state_shapes(mgr: CacheManager) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """`kind.name -> ([L, *shape], dtype)` of every base state that `state()` returns."""
    out = {}
    for h in mgr.handlers:
        for name in h.transfer_states():
            view = h.base[name].view
            out[f"{h.kind}.{name}"] = ((view.shape[0], *view.shape[2:]), view.dtype)
    return out


def random_state(mgr: CacheManager, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """A random base state for one request of `mgr` (every value distinct in practice)."""
    return {k: torch.randn(shape, generator=gen).to(dtype) for k, (shape, dtype) in state_shapes(mgr).items()}


def assert_states_equal(got: dict, want: dict, what: str = "") -> None:
    assert got.keys() == want.keys(), f"{what}: keys {sorted(got)} != {sorted(want)}"
    for k in want:
        assert got[k].dtype == want[k].dtype, f"{what}: {k} dtype {got[k].dtype} != {want[k].dtype}"
        assert torch.equal(got[k], want[k]), f"{what}: {k} differs"


def clone_pools(mgr: CacheManager) -> dict[str, torch.Tensor]:
    return {k: p.storage.clone() for k, p in mgr.pools.items()}


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor, so NaN sentinels and uninitialized memory compare bitwise."""
    return t.contiguous().flatten().view(torch.uint8)


def assert_pools_equal(mgr: CacheManager, before: dict[str, torch.Tensor]) -> None:
    for k, p in mgr.pools.items():
        assert torch.equal(bits(p.storage), bits(before[k])), f"pool {k} changed"


def write_replay_step(mgr: CacheManager, step, gen: torch.Generator, scale: float = 1.0) -> None:
    """What a verify step of the model writes under the replay scheme: random ring inputs for the kinds
    with a replay recurrence, random intermediate states for the others (Mamba1, lightning)."""
    for row, request in enumerate(step.requests):
        slot, buf = mgr.slot_of(request), int(step.ring_buf[row])
        for meta in mgr.replay_metadata().values():
            for view in meta.rings.values():
                view[:, slot, buf] = (torch.rand(view.shape[3:], generator=gen) * scale).to(view.device)
        for pool in mgr.pools.values():
            if pool.decl.role is Role.INTERMEDIATE:
                view = pool.view[:, row]
                view.copy_(torch.randn(view.shape, generator=gen).to(view.device))
