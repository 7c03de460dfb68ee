"""Kernel-only cases: one Triton kernel on one state pool of the manager, and its configuration sweep.

The manager ops of `ops.py` move everything a request's state has (conv and SSM state, all layers);
these time each kernel on the SSM state pool alone (the conv window for `replay_fold_conv`), as the
kernel tables in `results/kernels/` do. `pack_heads`/`unpack_heads` move the first half of the
heads (a TP-2 receiver's share). `sweep_cases` times the block/warps variants of the copy kernel and the
folds through their plans' `config=` argument (CUDA only). Like the manager ops, each case launches the kernel
through its plan (`mcache.kernels.*_plan`), bound to the pools once.
"""

from __future__ import annotations

import torch

from mcache import kernels as K
from mcache.bench.fla import fla_cases
from mcache.bench.ops import FOLD_REFS, CaseBuilder, Needs, OpCase, _index_put, _nbytes
from mcache.bench.vllm_ssm import vllm_cases
from mcache.core.kinds.base import Role
from mcache.kernels.replay_fold import reference as fold_ref

KERNEL_OPS = ("copy_slots", "commit_intermediate", "pack_heads", "unpack_heads", "replay_fold", "replay_fold_conv")
# The pool each kernel op needs beside the state: kinds or schemes without it have no such rows.
KERNEL_BUFFERS = {"commit_intermediate": Needs(Role.INTERMEDIATE, Role.STATE, "inter_ssm"),
                  "replay_fold": Needs(Role.RING, Role.CONV, "ring_conv_in"),
                  "replay_fold_conv": Needs(Role.RING, Role.CONV, "ring_conv_in")}
SWEEP_OPS = ("copy_slots", "replay_fold", "replay_fold_conv")  # the kernels `sweep_cases` times
COPY_CONFIGS = [(8192, 8), (16384, 16), (32768, 16), (32768, 32), (65536, 32)]  # (BLOCK, num_warps)
# Mamba2: (BP rows a block, num_warps, RB blocks a program, pipeline stages), valid in either form (BP >= 16 for the
# tensor-core one); GatedDeltaNet and KDA: (BV rows a program, num_warps).
FOLD_CONFIGS = {"mamba2": [(16, 1, 1, 1), (16, 1, 4, 3), (16, 1, 4, 4), (32, 2, 2, 2)],
                "gdn": [(16, 2), (32, 2), (64, 4), (128, 8)], "kda": [(16, 2), (32, 2), (64, 4)]}
CONV_CONFIGS = [(256, 2), (512, 2), (512, 4), (1024, 4), (2048, 8)]


class KernelCaseBuilder(CaseBuilder):
    """`OpCase`s of single kernels over the SSM pool of one kind (`op` names the kernel)."""

    def _fold_args(self, batch: int):
        slots = self._slots(batch)
        buf = torch.randint(0, 2, (batch,), generator=self.gen).to(slots.device)
        count = torch.full((batch,), self.history, dtype=torch.int64, device=slots.device)
        return slots, buf, count

    def _ring_bytes(self, rings: list[torch.Tensor], batch: int) -> int:
        return sum(batch * r.shape[0] * r[0, 0, 0, 0].numel() * r.element_size() * self.history for r in rings)

    def copy_slots(self, batch: int, config=None) -> OpCase:
        ssm = self.base[Role.STATE]
        src, dst = self._slots(batch, 2).split(batch)
        plan = K.copy_slots_plan([(ssm, ssm)], config=config)
        return self._case("copy_slots", batch, _nbytes([ssm], batch), lambda: plan(src, dst), lambda: _index_put(ssm, dst, ssm[:, src]),
                          lambda: torch.equal(ssm[:, dst], ssm[:, src]))

    def commit_intermediate(self, batch: int) -> OpCase:
        pool, inter = self.base[Role.STATE], self.inter[Role.STATE]
        slots = self._slots(batch)
        rows = torch.randperm(inter.shape[1], generator=self.gen)[:batch].to(slots.device)
        accepted = torch.randint(1, self.tokens + 1, (batch,), generator=self.gen).to(slots.device)
        plan = K.commit_intermediate_plan([(pool, inter)])
        return self._case("commit_intermediate", batch, _nbytes([pool], batch), lambda: plan(slots, rows, accepted),
                          lambda: _index_put(pool, slots, inter[:, rows, accepted - 1]),
                          lambda: torch.equal(pool[:, slots], inter[:, rows, accepted - 1]))

    def _half_heads(self, batch: int):
        ssm = self.base[Role.STATE]
        n = ssm[0, 0].numel() // ssm.shape[2] * (ssm.shape[2] // 2 or 1)
        packed = torch.empty((batch, ssm.shape[0], n), dtype=ssm.dtype, device=ssm.device)
        return ssm, ssm.flatten(2), [(0, n)], n, packed

    def pack_heads(self, batch: int) -> OpCase:
        ssm, flat, ranges, n, out = self._half_heads(batch)
        slots = self._slots(batch)
        plan = K.pack_plan([(ssm, ranges, out)])
        return self._case("pack_heads", batch, 2 * batch * ssm.shape[0] * n * ssm.element_size(), lambda: plan(slots),
                          lambda: out.copy_(flat[:, slots, :n].transpose(0, 1)),
                          lambda: torch.equal(out, flat[:, slots, :n].transpose(0, 1)))

    def unpack_heads(self, batch: int) -> OpCase:
        ssm, flat, ranges, n, packed = self._half_heads(batch)
        packed.uniform_(-1, 1)
        slots = self._slots(batch)
        plan = K.unpack_plan([(ssm, ranges, packed)])

        def baseline() -> None:
            flat[:, slots, :n] = packed.transpose(0, 1)

        return self._case("unpack_heads", batch, 2 * batch * ssm.shape[0] * n * ssm.element_size(), lambda: plan(slots),
                          baseline,
                          lambda: torch.equal(flat[:, slots, :n], packed.transpose(0, 1)))

    def replay_fold(self, batch: int, config=None) -> OpCase | None:
        rings = self.rings[Role.STATE]
        if not rings:
            return None
        ssm = self.base[Role.STATE]
        slots, buf, count = self._fold_args(batch)
        plan = K.fold_plan(self.kind, ssm, *rings, config=config)

        def run() -> None:
            plan(slots, buf, count)

        ref = FOLD_REFS[self.kind]

        def reference() -> None:
            ref(ssm, *rings, slots, buf, count)

        case = self._case("replay_fold", batch, _nbytes([ssm], batch) + self._ring_bytes(rings, batch), run, reference,
                          _fold_check(ssm, slots, run, reference), graph_baseline=False, baseline_impl="torch-loop",
                          work=self.fold_work(batch))
        if config is None:  # FLA's kernels and vLLM's beside the fold (not in the sweep)
            others = [(impl, fn, final, reference)
                      for impl, fn, final in fla_cases(self.kind, ssm, rings, slots, buf, self.history, self.gen)]
            others += vllm_cases(self.kind, ssm, rings, slots, buf, self.history, self.gen,
                                 lambda dA: ref(ssm, *rings[:3], dA, slots, buf, count))
            case.others = [(impl, fn, _final_check(ssm, slots, final, check_ref)) for impl, fn, final, check_ref in others]
        return case

    def replay_fold_conv(self, batch: int, config=None) -> OpCase:
        conv, (conv_in,) = self.base[Role.CONV], self.rings[Role.CONV]
        slots, buf, count = self._fold_args(batch)
        plan = K.fold_plan("conv", conv, conv_in, config=config)

        def run() -> None:
            plan(slots, buf, count)

        def reference() -> None:
            fold_ref.replay_fold_conv_reference(conv, conv_in, slots, buf, count)

        return self._case("replay_fold_conv", batch, _nbytes([conv], batch), run, reference,
                          _fold_check(conv, slots, run, reference), graph_baseline=False, baseline_impl="torch-loop")


def _fold_check(state: torch.Tensor, slots: torch.Tensor, run, reference):
    """Run the kernel and the torch reference from the same state; their results agree within bf16 noise."""

    def check() -> bool:
        before = state[:, slots].clone()
        run()
        got = state[:, slots].float()
        state[:, slots] = before
        reference()
        return torch.allclose(got, state[:, slots].float(), rtol=2e-2, atol=2e-2)

    return check


def _final_check(state: torch.Tensor, slots: torch.Tensor, final, reference):
    """`final()` (the folded states, the pool untouched) agrees with the torch reference within bf16 noise."""

    def check() -> bool:
        got = final().float()
        before = state[:, slots].clone()
        reference()
        want = state[:, slots].float()
        state[:, slots] = before
        return torch.allclose(got, want, rtol=2e-2, atol=2e-2)

    return check


def sweep_cases(builder: KernelCaseBuilder, batch: int) -> list[tuple[str, OpCase]]:
    """`(impl, case)` of every configuration of the copy kernel and this kind's folds at `batch`, for each of them
    whose slots fit (`builder.unfit`)."""
    configs = {"copy_slots": COPY_CONFIGS}
    if builder.rings[Role.CONV]:
        configs |= {"replay_fold": FOLD_CONFIGS.get(builder.kind, []), "replay_fold_conv": CONV_CONFIGS}
    cases = [(f"triton@{'x'.join(map(str, config))}", getattr(builder, op)(batch, config))
             for op, sizes in configs.items() if builder.unfit(op, batch) is None for config in sizes]
    return [(impl, case) for impl, case in cases if case is not None]
