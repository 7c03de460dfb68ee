"""The transfer between processes (`mcache bench --ops transfer --sender-tp/--receiver-tp`) on gloo, on the CPU.

One world of 6 spawned processes runs every case over a subgroup of its first ranks (one start-up for all of
them); each receiver checks its pools bitwise against the single-process path (`CacheManager.export` of every
sender, `import_` into a fresh manager of its rank).
"""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from paths import TINY_SPEC

from mcache.bench.transfer import TransferConfig, TransferRank, _free_port, plan_of, run_transfer
from mcache.cli.main import main

# Odd dims, bf16 conv beside fp32 SSM (parts of two dtypes in one pair buffer), Mamba2's 2 groups replicated at
# TP 4, and 6 layers so PP 2 splits them 3 + 3.
SPEC = """
name: tiny-transfer
source: test
hidden_size: 12
vocab_size: 100
num_layers: 6
dtype: bfloat16
ssm_dtype: float32
layers: {types: [mamba2, gdn, attention, mamba1, mamba2, gdn]}
attention: {num_heads: 4, num_kv_heads: 2, head_dim: 6}
mamba2: {num_heads: 4, head_dim: 3, state_size: 5, n_groups: 2, conv_kernel: 4}
gdn: {num_k_heads: 4, num_v_heads: 8, k_head_dim: 3, v_head_dim: 5, conv_kernel: 4}
mamba1: {intermediate_size: 8, state_size: 3, conv_kernel: 4}
"""

# (sender tp, pp), (receiver tp, pp): 1->2, 2->1, 2->4 and a PP change (two stages to one of TP 2)
CASES = [((1, 1), (2, 1)), ((2, 1), (1, 1)), ((2, 1), (4, 1)), ((1, 2), (2, 1))]
WORLD = 6
BATCH = 3
DEADLINE_S = 120  # a hung rank fails the test instead of the CI job


def _reference_check(cfg: TransferConfig, side: TransferRank) -> None:
    """The receiver's pools equal what the single-process export/import path writes, bitwise."""
    cpu = torch.device("cpu")
    senders = [TransferRank(cfg, s, cpu) for s in range(cfg.sender[0] * cfg.sender[1])]
    for s in senders:
        s.fill(BATCH)
    ref = TransferRank(cfg, side.index + len(senders), cpu)
    for name in ref.fill(BATCH):
        ref.manager.import_(name, [r for s in senders for r in s.manager.export(name, to=(side.tp, side.tp_rank))])
        got, want = side.manager.state(name), ref.manager.state(name)
        assert got.keys() == want.keys()
        for key in want:
            assert torch.equal(got[key], want[key]), f"{cfg.sender}->{cfg.receiver} receiver {side.index} {key}"


def _child(rank: int, spec: str, init: str) -> None:
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    try:
        for sender, receiver in CASES:
            cfg = TransferConfig(spec, sender, receiver, [BATCH], "cpu", None, reps=1, max_seq_len=32)
            group = dist.new_group(list(range(cfg.world)))
            if rank < cfg.world:
                side = TransferRank(cfg, rank, torch.device("cpu"), group)
                row = side.measure(BATCH)
                assert row.status == "ok", row.reason
                assert row.bytes == BATCH * sum(p.state_bytes for p in plan_of(cfg))
                if not side.is_sender:
                    _reference_check(cfg, side)
    finally:
        dist.destroy_process_group()


def test_gloo_transfer_across_tp_and_pp_is_bitwise_equal_to_the_single_process_path(tmp_path):
    spec = tmp_path / "tiny-transfer.yaml"
    spec.write_text(SPEC)
    ranks = mp.spawn(_child, args=(str(spec), f"tcp://127.0.0.1:{_free_port()}"), nprocs=WORLD, join=False)
    end = time.monotonic() + DEADLINE_S
    while not ranks.join(timeout=1):
        if time.monotonic() > end:
            for p in ranks.processes:
                p.kill()
            raise AssertionError(f"the {WORLD} ranks did not finish in {DEADLINE_S} s")


def test_spawned_run_writes_rows_with_phases(tmp_path):
    spec = tmp_path / "tiny-transfer.yaml"
    spec.write_text(SPEC)
    results = run_transfer(TransferConfig(str(spec), (1, 1), (1, 1), [1, 2], "cpu", None, reps=2, max_seq_len=32))
    assert [(r.op, r.impl, r.kind, r.batch, r.status) for r in results.rows] == [
        ("transfer", "gloo", "state", 1, "ok"), ("transfer", "gloo", "state", 2, "ok")]
    row = results.rows[1]
    assert row.pack_us > 0 and row.wire_us > 0 and row.unpack_us > 0 and row.size_matched_us > 0
    assert results.meta.layout == {"sender_tp": 1, "sender_pp": 1, "receiver_tp": 1, "receiver_pp": 1, "world": 2}
    assert results.meta.spec_file == "tiny-transfer.yaml"  # outside the working directory: its name alone


@pytest.mark.parametrize("args,needle", [
    (["--ops", "transfer,pack", "--sender-tp", "1", "--receiver-tp", "2"], "time --ops transfer alone"),
    (["--ops", "transfer", "--receiver-tp", "2", "--backend", "nccl", "--device", "cpu"], "--backend nccl needs --device cuda"),
    (["--ops", "transfer", "--receiver-tp", "4", "--device", "cpu"], "tiny-hybrid.yaml:12: gdn.num_k_heads: 2 heads cannot be split"),
    (["--ops", "transfer", "--receiver-tp", "0"], "Invalid value for '--receiver-tp'"),
])
def test_bad_transfer_options_are_one_line_and_exit_2(args, needle, capsys):
    assert main(["bench", TINY_SPEC, *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_caches_beyond_the_free_memory_are_refused_before_any_process_starts(monkeypatch, tmp_path):
    from mcache.bench import device_info, transfer
    from mcache.core.errors import McacheError
    from mcache.core.sizing.estimate import estimate_rank

    spec = tmp_path / "tiny.yaml"
    spec.write_text(SPEC)
    cfg = TransferConfig(str(spec), (2, 1), (1, 1), [1, 8], "cpu", "gloo", 1, 64)
    need = sum(estimate_rank(transfer.rank_context(cfg, transfer.load_spec(str(spec)), r)).cache_bytes for r in range(3))
    monkeypatch.setattr(device_info, "free_bytes", lambda device: need - 1)  # the three ranks share the host
    monkeypatch.setattr(mp, "spawn", lambda *a, **k: pytest.fail("spawned"))
    with pytest.raises(McacheError, match=r"the caches of the transfer's ranks on cpu take .* GiB, more than the"):
        run_transfer(cfg)
    monkeypatch.setattr(device_info, "free_bytes", lambda device: need)
    transfer.check_memory(cfg, {r: torch.device("cpu") for r in range(3)})  # exactly enough passes
