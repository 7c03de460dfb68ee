"""SGLang's own sizing of the models with a sparse-attention indexer (tests/data/hf_configs_indexer: Qwen3.8-Flash-Next's
QSA, GLM-5.3-Flash's DSA), case by case against mcache's SGLang profile, at every release that serves them."""

from __future__ import annotations

from collections import Counter

import pytest
from oracle_util import load_oracle
from paths import HF_CONFIGS_INDEXER

sglang_compare = load_oracle("sglang_compare")
golden = sglang_compare.golden
TABLES = golden.tables("sglang", golden.INDEXER)


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_case_of_sglangs_own_tables_matches(table):
    """scripts/oracles/sglang.py --config-dir tests/data/hf_configs_indexer. Qwen3.8-Flash-Next: the compressed keys in
    the KV cell (64 B a token a layer), pages of 64, the PLE window and the indexer's ring outside the budget, the
    extra-buffer strategy. GLM-5.3-Flash: the latent and the DSA keys in the cell (1,024 + 33 B a layer from 0.5.22,
    1,024 + 132 before), pages of 256 (64 before), bf16 on sm90, the MTP layer stacked in the state pool while drafting
    (0.5.20-0.5.22), ROCm's page of 1 refused from 0.5.22. `--qsa-indexer-dtype` (a flag from 0.5.22): Qwen3.8's keys
    in fp8 or bf16, fp8 refused off CUDA SM 9 / 10, any but auto refused as GLM's pool (no QSA) is built. SM 12 cards
    answering their own capability (the RTX PRO 6000 at TP 4 and 8, the RTX 5090 at TP 8): GLM's fp8 default, its raw
    512 B latent; the shared grid's RTX 5090 cases (TP 1 and 4) run on their card too since 2026-12-06. Every case
    but those `excluded` names (an environment variable)."""
    data = golden.read(table)
    compared = [case for case in data["cases"] if sglang_compare.excluded(case) is None]
    differing = [(case["config"], case["flags"], diff) for case in compared
                 if (diff := sglang_compare.differences(case, sglang_compare.mcache_case(case, data["version"],
                                                                                         HF_CONFIGS_INDEXER)))]
    assert Counter(case["config"] for case in compared) == {"qwen3.8-flash-next-fp8.json": 82,
                                                             "glm-5.3-flash-fp8.json": 82}
    on_sm12 = [case for case in compared if case["inputs"].get("card_capability")]
    assert len(on_sm12) == 16 and all(case["inputs"]["gpu"] in ("RTX-5090", "RTX-PRO-6000") for case in on_sm12)
    assert differing == []


def test_the_tables_cover_every_release_that_serves_them():
    assert [golden.read(t)["version"] for t in TABLES] == ["0.5.20", "0.5.21", "0.5.22", "0.5.23"]


def test_the_glm_tables_refuse_rocms_page_and_check_the_real_cards_alone():
    """From 0.5.22 the AMD cases fail to build the DSA pool (a page of one token, keys of four); every SM 12 case runs on
    its card (the RTX 5090's fp8 default, SGLang's DSA rule from SM 10, is compared)."""
    newest = golden.read(TABLES[-1])
    glm = [case for case in newest["cases"] if case["config"] == "glm-5.3-flash-fp8.json"]
    refused = {case["inputs"]["gpu"] for case in glm if (sglang_compare.sglang_error(case) or "").startswith(
        "page_size 1 must be a multiple of index_kpool 4")}
    assert refused == {"MI300X", "MI325X", "MI355X"}
    assert all(case["inputs"].get("card_capability") for case in glm if case["inputs"]["gpu"] == "RTX-5090")


VLLM = golden.tables("vllm", golden.INDEXER)
vllm_compare = load_oracle("compare")


@pytest.mark.parametrize("table", VLLM, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_case_of_vllms_own_tables_matches(table):
    """scripts/oracles/vllm.py --config-dir tests/data/hf_configs_indexer --configs glm-5.3-flash-fp8.json: GLM-5.3-Flash
    at TP 1, 2 and 4, with and without prefix caching, 0, 3 and 7 MTP drafts, bf16 and float32 states, a bf16 and an
    fp8 KV cache (FLASHINFER_MLA_SPARSE_SM90: the latent 1,024 B a token in bf16, 512 B in E4M3). At 0.30 - 0.31 vLLM's
    own GLM groups (a block 11 x (latent + keys) of the attention block, the KDA layers over cdiv(34, 11) groups), from
    0.32 the packed block-outer ones (the block rounded to the lcm of the latent's token and the indexer's stride page,
    FlashKDA's checkpoint block)."""
    data = golden.read(table)
    differing = [(case["flags"], rows) for case in data["cases"]
                 if (rows := [row for row in vllm_compare.compare_case(HF_CONFIGS_INDEXER, case, data["version"])
                              if row[-1]])]
    sized = Counter(case["flags"]["kv_cache_dtype"] for case in data["cases"]
                    if case["result"].get("num_blocks") and not case["error"])
    assert differing == [] and sized["auto"] >= 20 and sized["fp8"] >= 15


SM12 = golden.tables("vllm", golden.INDEXER / "rtx-pro-6000")


@pytest.mark.parametrize("table", SM12, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_every_case_of_vllms_own_tables_on_an_sm12_card_matches(table):
    """The same keys with `--device rtx-pro-6000`: vLLM's platform answering as an RTX PRO 6000 Blackwell (SM 12.0,
    97,887 MiB), where FLASHINFER_MLA_SPARSE_SM120 keeps `auto` and fp8 as fp8_ds_mla rows (656 B; 528 from 0.34), the
    hybrid alignment counts the latent at a byte a value, the indexer's blocks are 64 x index_kpool tokens and, from
    0.32, a block's stride a multiple of 64 rows."""
    data = golden.read(table)
    assert data["device"]["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    differing = [(case["flags"], rows) for case in data["cases"]
                 if (rows := [row for row in vllm_compare.compare_case(HF_CONFIGS_INDEXER, case, data["version"],
                                                                        data["device"]) if row[-1]])]
    sized = Counter(case["flags"]["kv_cache_dtype"] for case in data["cases"]
                    if case["result"].get("num_blocks") and not case["error"])
    assert differing == [] and sized["auto"] >= 20 and sized["fp8"] >= 12
    assert [golden.read(t)["version"] for t in SM12] == ["0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"]


def test_the_vllm_tables_cover_every_release_mcache_sizes_it_at():
    assert [golden.read(t)["version"] for t in VLLM] == ["0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"]
