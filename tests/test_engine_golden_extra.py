"""mcache's engine profiles against the golden tables over real configs the shared fixtures lack
(tests/data/hf_configs_extra, PROVENANCE.md there): tests/data/engine_golden/extra/<engine>-<version>.json.gz, made by
the oracles' own code with `--config-dir tests/data/hf_configs_extra --out ...` (scripts/oracles/vllm_versions.md,
sglang_versions.md). Every case of every table is compared as the release tables are (tests/test_engine_golden.py,
tests/test_engine_golden_sglang.py), so a rule that holds only for the shared fixtures fails here.

KNOWN holds the mismatches whose cause mcache does not model, each named, with the exact count per table and config.
"""

from __future__ import annotations

from collections import Counter

import pytest
from oracle_util import load_oracle
from paths import HF_CONFIGS_EXTRA as CONFIGS

vllm_compare = load_oracle("compare")
sglang_compare = load_oracle("sglang_compare")
golden = vllm_compare.golden
VLLM = golden.tables("vllm", golden.EXTRA)
SGLANG = golden.tables("sglang", golden.EXTRA)
# Mismatches not modelled, per engine-version and config: (cases, cause). Each count is exact.
ZYPHRA = ("mcache refuses the Zyphra-format config at import, naming the upstream Zamba2Config defaults that leave "
          "8 x 64 Mamba heads for 7168 channels; the engine refuses it later, in its own words (vLLM: the "
          "max_model_len check, then the state page or the Mamba2 groups assertion; SGLang: no Zamba2 class), or, "
          "where vLLM 0.10.2 - 0.31.0 and 0.34.0 size those 8 x 64 heads (the oracle loads no weights), the "
          "checkpoint's tensors would not fit them")
# SGLang builds the model before its pools (model_runner.py load_model), and so does the oracle up to the first mixer
# (sglang_worker.py _build_model): FalconH1HybridAttentionDecoderLayer.__init__ asserts `self.total_num_heads %
# self.attn_tp_size == 0` (models/falcon_h1.py, line 120 at 0.5.23) with no message; both refuse, mcache in its own words
HEADS_TP = ("Falcon-H1-3B's 10 attention heads at TP 4: SGLang's FalconH1HybridAttentionDecoderLayer stops with a bare "
            "'AssertionError: ' while it builds the model; mcache refuses the layout naming the heads and the TP (exit 2)")
# SGLang 0.5.11 (server_args.py) refuses --mamba-radix-cache-strategy extra_buffer for FalconH1 before it builds the model
HEADS_TP_STRATEGY = ("Falcon-H1-3B's 10 attention heads at TP 4 with extra_buffer: SGLang 0.5.11 refuses the strategy for "
                     "FalconH1ForCausalLM first, mcache the layout naming the heads and the TP (exit 2)")
# ... and SGLang 0.5.10 and 0.5.12, which refuse the extra buffer ("mamba extra_buffer is not supported for
# FalconH1ForCausalLM model") and, with a draft, the radix cache's no_buffer strategy for FalconH1 before they build it
HEADS_TP_NO_BUFFER = HEADS_TP + ("; SGLang 0.5.10 and 0.5.12 refuse the extra_buffer strategy and, with a draft, no_buffer's "
                                 "radix cache for FalconH1ForCausalLM first (two of the five)")
# ... and SGLang 0.5.14 - 0.5.15 on the MI300X, where the default strategy (extra_buffer for FalconH1) is refused on ROCm
HEADS_TP_ROCM = HEADS_TP + ("; on the MI300X SGLang 0.5.14 - 0.5.15 refuses the extra_buffer strategy on ROCm ('extra_buffer needs "
                            "CUDA/MUSA/NPU (FLA).') before it builds the model")
# state-spaces/mamba2-130m's mamba_ssm config: SGLang 0.5.20 on builds it as Mamba-1 MambaForCausalLM
# (utils/hf_transformers/config.py _try_load_raw_mamba_config) and sizes that model's pools, which the oracle records;
# the checkpoint's Mamba2 tensors do not fit that class, so the real load fails, past where the oracle (no weights)
# stops: mcache says it does not start (engines/sglang.py _raw_unfit)
RAW_MAMBA2 = ("SGLang sizes state-spaces/mamba2-130m's mamba_ssm config as the Mamba-1 MambaForCausalLM it builds of it; "
              "its Mamba2 weights do not fit that class, a failure of the load the oracle does not reach: mcache says "
              "it does not start")
RAW_MAMBA2_SGLANG = {"0.5.20": 47, "0.5.21": 42, "0.5.22": 42, "0.5.23": 42}
# Zamba2-7B's Zyphra-format cases each vLLM table holds (every one a known mismatch)
ZYPHRA_VLLM = {"0.10.2": 82, "0.11.0": 75, "0.11.1": 75, "0.12.0": 75, "0.13.0": 75, "0.14.0": 75, "0.17.0": 116,
               "0.18.0": 107, "0.19.0": 107, "0.20.1": 115, "0.21.0": 107, "0.22.0": 116, "0.23.0": 107, "0.24.0": 111,
               "0.25.0": 104, "0.26.0": 101, "0.27.0": 104, "0.28.0": 109, "0.29.0": 109, "0.30.0": 109, "0.31.0": 103,
               "0.32.0": 108, "0.33.0": 108, "0.34.0": 114}
KNOWN: dict[str, dict[str, tuple[int, str]]] = {**{f"vllm-{v}": {"zamba2-7b-zyphra-format.json": (n, ZYPHRA)}
                                                   for v, n in ZYPHRA_VLLM.items()},
                                                "sglang-0.5.9": {"zamba2-7b-zyphra-format.json": (25, ZYPHRA)},
                                                "sglang-0.5.11": {"zamba2-7b-zyphra-format.json": (51, ZYPHRA),
                                                                  "falcon-h1-3b.json": (5, HEADS_TP_STRATEGY)},
                                                **{f"sglang-{v}": {"zamba2-7b-zyphra-format.json": (51, ZYPHRA),
                                                                   "falcon-h1-3b.json": (5, HEADS_TP_NO_BUFFER)}
                                                   for v in ("0.5.10", "0.5.12")},
                                                "sglang-0.5.13": {"zamba2-7b-zyphra-format.json": (51, ZYPHRA),
                                                                  "falcon-h1-3b.json": (5, HEADS_TP)},
                                                **{f"sglang-{v}": {"zamba2-7b-zyphra-format.json": (71, ZYPHRA),
                                                                   "falcon-h1-3b.json": (5, HEADS_TP_ROCM)}
                                                   for v in ("0.5.14", "0.5.15")},
                                                **{f"sglang-{v}": {"zamba2-7b-zyphra-format.json": (71, ZYPHRA),
                                                                   "falcon-h1-3b.json": (5, HEADS_TP),
                                                                   **({"mamba2-130m-mamba-ssm.json":
                                                                       (RAW_MAMBA2_SGLANG[v], RAW_MAMBA2)}
                                                                      if v in RAW_MAMBA2_SGLANG else {})}
                                                   for v in ("0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21",
                                                             "0.5.22", "0.5.23")}}


def test_the_extra_tables_cover_every_extra_config_at_the_newest_releases():
    configs = {p.name for p in CONFIGS.glob("*.json")}
    newest = {engine: max(tables, key=lambda t: tuple(int(n) for n in golden.read(t)["version"].split(".")))
              for engine, tables in (("vllm", VLLM), ("sglang", SGLANG))}
    assert {engine: sorted({c["config"] for c in golden.read(t)["cases"]}) for engine, t in newest.items()} == {
        "vllm": sorted(configs), "sglang": sorted(configs)}


def test_the_release_tables_are_not_the_extra_ones():
    assert not set(golden.tables("vllm")) & set(VLLM) and not set(golden.tables("sglang")) & set(SGLANG)


@pytest.mark.parametrize("table", VLLM, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_extra_vllm_case_matches_the_engine(table):
    data = golden.read(table)
    differing: Counter = Counter()
    for case in data["cases"]:
        if any(cause is not None for *_, cause in vllm_compare.compare_case(CONFIGS, case, data["version"])):
            differing[case["config"]] += 1
    known = KNOWN.get(f"vllm-{data['version']}", {})
    assert dict(differing) == {config: count for config, (count, _) in known.items()}


@pytest.mark.parametrize("table", SGLANG, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_extra_sglang_case_matches_the_engine(table):
    data = golden.read(table)
    version = data["version"]
    differing = Counter(case["config"] for case in data["cases"] if sglang_compare.excluded(case) is None and
                        sglang_compare.differences(case, sglang_compare.mcache_case(case, version, CONFIGS)))
    known = KNOWN.get(f"sglang-{version}", {})
    assert dict(differing) == {config: count for config, (count, _) in known.items()}
