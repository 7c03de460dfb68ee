"""The manager allocates exactly what the estimator declares: every bundled spec, layout and scheme, on meta."""

from __future__ import annotations

import itertools

import pytest

from mcache.cache.manager import CacheManager, verify
from mcache.core.errors import LayoutError
from mcache.core.load import bundled_names, load_spec
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes

LAYOUTS = {
    "tp1": ParallelLayout(tp=1),
    "tp2": ParallelLayout(tp=2),
    "tp4": ParallelLayout(tp=4),
    "pp2": ParallelLayout(pp=2),
    "tp2-pp2": ParallelLayout(tp=2, pp=2),
    "dp4": ParallelLayout(tp=4, attention_dp=True),
}
SCHEMES = {"none": 0, "intermediate": 3, "replay": 3, "index": 3}


@pytest.mark.parametrize("name", bundled_names())
def test_bundled_spec_allocates_its_estimate(name):
    spec = load_spec(name)
    dtypes = resolve_dtypes(spec)
    checked = 0
    for (lname, layout), (scheme, draft), pool_layout in itertools.product(LAYOUTS.items(), SCHEMES.items(), ("layer", "slot")):
        runtime = RuntimeConfig(max_batch=16, max_seq_len=4096, draft_tokens=draft, spec_scheme=scheme, snapshot_slots=4)
        try:
            est = estimate(spec, layout, runtime, dtypes)
        except LayoutError:
            continue  # the model cannot be split this way (e.g. heads % tp != 0); the estimator says so
        rows = verify(est, "meta", pool_layout)
        bad = [r for r in rows if r.difference]
        assert not bad, f"{name} {lname} {scheme} {pool_layout}: {bad}"
        assert {r.key for r in rows} == {c.decl.key for rank in est.ranks for c in rank.components}
        assert sum(r.allocated for r in rows) == sum(rank.cache_bytes for rank in est.ranks)
        checked += 1
    assert checked >= len(SCHEMES) * 2 * 3, f"{name}: only {checked} combinations could be laid out"


def _tiny_estimate(scheme="intermediate", draft=2):
    from manager_util import ALL_KINDS, spec_of

    spec = spec_of(ALL_KINDS)
    runtime = RuntimeConfig(max_batch=3, max_seq_len=40, tokens_per_block=4, draft_tokens=draft, spec_scheme=scheme, snapshot_slots=2)
    return estimate(spec, ParallelLayout(tp=2, pp=2), runtime, resolve_dtypes(spec))


@pytest.mark.parametrize("pool_layout", ["layer", "slot"])
@pytest.mark.parametrize("scheme,draft", [("none", 0), ("intermediate", 2), ("replay", 2), ("index", 2)])
def test_cpu_allocation_matches_and_has_the_declared_shapes(scheme, draft, pool_layout):
    est = _tiny_estimate(scheme, draft)
    rows = verify(est, "cpu", pool_layout)
    assert rows and all(r.difference == 0 for r in rows)
    for rank in est.ranks:
        mgr = CacheManager(rank.ctx, device="cpu", pool_layout=pool_layout)
        for comp in rank.components:
            decl, pool = comp.decl, mgr.pools[comp.decl.key]
            view = pool.view
            assert view.dtype.itemsize * view.numel() == comp.total_bytes
            if decl.per == "token":
                assert view.shape == (decl.layers, comp.units // 4, 4 // decl.tokens_per_row, *decl.shape)
            else:
                assert view.shape == (decl.layers, comp.units, *decl.shape)
            lead = view.shape[:2] if pool_layout == "layer" else view.shape[1::-1]
            assert pool.storage.shape[:2] == lead


def test_verify_reports_a_difference():
    est = _tiny_estimate()
    rank = est.ranks[0]
    comp = rank.components[0]
    fake = type(comp)(comp.decl, comp.units + 1)  # an estimate that claims one unit more
    est.ranks[0] = type(rank)(rank.ctx, [fake, *rank.components[1:]], rank.weight_bytes, rank.param_count)
    rows = verify(est)
    bad = [r for r in rows if r.difference]
    assert len(bad) == 1 and bad[0].key == comp.decl.key and bad[0].difference == -comp.decl.bytes_per_unit
