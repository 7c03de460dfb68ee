"""Parallel layout (TP/PP/attention-DP) and runtime settings of a deployment."""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import force_setattr

from mcache.core.errors import LayoutError
from mcache.core.numbers import cdiv

SCHEMES = ("none", "intermediate", "replay", "index")


def blocks_per_seq(tokens: int, window: int | None, block: int) -> int:
    """KV blocks a sequence of `tokens` tokens holds: capped at `window`, in blocks of `block` tokens (the
    estimate and the manager's block tables both count with this)."""
    return cdiv(min(tokens, window) if window else tokens, block)


class ParallelLayout(Struct, frozen=True):
    """How one model replica is split: `tp` ranks per stage, `pp` stages, attention data-parallel.

    Under attention DP a stage's `tp` ranks form `attention_dp_ranks` groups (`attention_dp_size`, None: `tp`, one rank
    a group), each running a batch of its own requests with the KV heads and recurrent state split over its
    `state_tp` ranks (the FFN and MoE weights stay sharded over the `tp` ranks): a rank's figures (its pools, the
    sequences its group runs) stay per rank, and the replica runs `attention_dp_ranks` times a rank's sequences
    (`replica_sequences`).
    """

    tp: int = 1
    pp: int = 1
    attention_dp: bool = False
    pp_partition: tuple[int, ...] | None = None
    attention_dp_size: int | None = None

    def __post_init__(self) -> None:
        if self.tp < 1 or self.pp < 1:
            raise LayoutError("tp/pp", f"positive sizes, got tp={self.tp} pp={self.pp}")
        size = self.attention_dp_size
        if size is not None and not self.attention_dp:
            raise LayoutError("attention_dp_size", f"given with attention_dp (attention data parallelism), got {size}")
        if size is not None and (size < 1 or self.tp % size):
            raise LayoutError("attention_dp_size", f"a divisor of tp {self.tp} (1 to {self.tp}), got {size}")
        if size == self.tp:
            force_setattr(self, "attention_dp_size", None)  # one layout, however its width of tp is written

    @property
    def state_tp(self) -> int:
        """TP that shards the state and the KV heads, the attention-TP group: `tp` / `attention_dp_ranks` (1 under
        attention DP of width `tp`, each rank holding them whole)."""
        return self.tp // self.attention_dp_ranks

    @property
    def attention_dp_ranks(self) -> int:
        """Groups of a stage that each run a batch of their own: `attention_dp_size` (default `tp`) under attention DP,
        else 1 (TP ranks share one)."""
        if not self.attention_dp:
            return 1
        return self.tp if self.attention_dp_size is None else self.attention_dp_size

    @property
    def attention_dp_width(self) -> int | None:
        """The attention-DP width as reports give it (`attention_dp_size`): `attention_dp_ranks` under attention DP,
        None without."""
        return self.attention_dp_ranks if self.attention_dp else None

    def replica_sequences(self, per_rank: int) -> int:
        """What the replica runs at once when each rank runs `per_rank` (the tightest stage's figure): the one place a
        rank's sequences become the replica's."""
        return per_rank * self.attention_dp_ranks

    def stages(self, num_layers: int) -> list[range]:
        """Layer indices of each PP stage: `pp_partition` if given, else an even split
        (the first `num_layers % pp` stages take one extra layer)."""
        if self.pp_partition is not None:
            part = self.pp_partition
            if len(part) != self.pp or sum(part) != num_layers or min(part) < 1:
                expected = f"{self.pp} positive counts summing to {num_layers}, got {list(part)}"
                raise LayoutError("pp_partition", expected)
        else:
            if self.pp > num_layers:
                raise LayoutError("pp", f"at most {num_layers} stages (one per layer), got {self.pp}")
            base, extra = divmod(num_layers, self.pp)
            part = tuple(base + (1 if i < extra else 0) for i in range(self.pp))
        starts = [sum(part[:i]) for i in range(self.pp)]
        return [range(s, s + n) for s, n in zip(starts, part, strict=True)]


class RuntimeConfig(Struct, frozen=True):
    """Serving settings that size the pools of one rank.

    `reserved_slots` defaults to one CUDA-graph padding slot per possible draft length
    (`draft_tokens + 1`) plus one for the attention-DP dummy request. `kv_tokens` caps the KV pool
    of each attention layer (default: every request in flight at `max_seq_len`), as engines that
    size KV from free memory do.
    """

    max_batch: int = 64
    max_seq_len: int = 8192
    tokens_per_block: int = 32
    draft_tokens: int = 0
    spec_scheme: str = "none"
    reserved_slots: int | None = None
    snapshot_slots: int = 0
    replay_history: int | None = None
    kv_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_seq_len", "tokens_per_block"):
            if getattr(self, name) < 1:
                raise LayoutError(name, f"a positive integer, got {getattr(self, name)}")
        if self.kv_tokens is not None and self.kv_tokens < self.tokens_per_block:
            raise LayoutError("kv_tokens", f"at least one block ({self.tokens_per_block} tokens), got {self.kv_tokens}")
        if self.reserved_slots is not None and self.reserved_slots < 0:
            raise LayoutError("reserved_slots", f"zero or more, got {self.reserved_slots}")
        for name in ("draft_tokens", "snapshot_slots"):
            if getattr(self, name) < 0:
                raise LayoutError(name, f"zero or more, got {getattr(self, name)}")
        if self.spec_scheme not in SCHEMES:
            raise LayoutError("spec_scheme", f"one of {', '.join(SCHEMES)}, got {self.spec_scheme!r}")
        if self.spec_scheme != "none" and self.draft_tokens == 0:
            raise LayoutError("draft_tokens", f"at least 1 with spec scheme {self.spec_scheme!r}")
        if self.spec_scheme == "none" and self.draft_tokens:
            expected = f"a scheme (intermediate, replay, index) for {self.draft_tokens} draft tokens"
            raise LayoutError("spec_scheme", expected)
        if self.replay_history is not None and self.replay_history < self.tokens_per_step:
            raise LayoutError("replay_history", f"at least tokens per step ({self.tokens_per_step})")

    @property
    def tokens_per_step(self) -> int:
        """T: tokens verified per generation step (draft + 1)."""
        return self.draft_tokens + 1

    @property
    def history(self) -> int:
        """Replay ring length: `max(16, T)` unless set."""
        return self.replay_history or max(16, self.tokens_per_step)

    def reserved(self, attention_dp: bool) -> int:
        """Reserved padding/dummy slots that are never handed to requests."""
        if self.reserved_slots is not None:
            return self.reserved_slots
        return self.draft_tokens + 1 + (1 if attention_dp else 0)

    def kv_tokens_per_seq(self, seq_len: int, window: int | None = None) -> int:
        """KV tokens one sequence of `seq_len` holds: capped at `window`, rounded up to whole blocks."""
        return blocks_per_seq(seq_len, window, self.tokens_per_block) * self.tokens_per_block
