"""Qwen3.8-Flash-Next (`qwen4_exp`): its QSA indexer caches, PLE window and hyper-connections, worked by hand from the
checkpoint's config; engines that serve it are refused as not modelled yet, in one line."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from paths import HF_CONFIGS_INDEXER

from mcache.cli.main import main
from mcache.core.errors import LayoutError, SpecError
from mcache.core.hf import import_hf
from mcache.core.hf.qwen4_exp import is_prime, ngram_table_rows
from mcache.core.kinds import KIND_MODULES
from mcache.core.sizing import weights
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
from mcache.core.sizing.rank import resolve_dtypes
from mcache.core.spec.model import layer_kinds

CONFIG = json.loads((HF_CONFIGS_INDEXER / "qwen3.8-flash-next-fp8.json").read_text())  # PROVENANCE.md there
TEXT = CONFIG["text_config"]


BF16, F32 = 2, 4


@pytest.fixture(scope="module")
def spec():
    return import_hf(HF_CONFIGS_INDEXER / "qwen3.8-flash-next-fp8.json")


def test_layers_indexer_on_every_attention_layer_ple_on_layer_2(spec):
    # full_attention reads as indexed_attention; ple_layer_ids is 1-based: layer index 1, a GatedDeltaNet layer
    assert Counter("+".join(k) for k in layer_kinds(spec)) == {
        "gdn+hc+moe": 35, "gdn+ple+hc+moe": 1, "attention+indexer+hc+moe": 12}
    assert layer_kinds(spec)[1] == ("gdn", "ple", "hc", "moe")
    assert spec.mtp.layer == "attention+indexer+moe" and spec.mtp.num_layers == 1
    assert (spec.indexer.num_heads, spec.indexer.head_dim, spec.indexer.kv_heads, spec.indexer.compress) == (4, 128, 1, 4)
    assert (spec.ple.streams, spec.ple.conv_kernel, spec.ple.dilation, spec.ple.embedding_dim) == (4, 4, 3, 160)
    assert "48 layers: 35 gdn+hc+moe, 1 gdn+ple+hc+moe, 12 attention+indexer+hc+moe." in spec.notes


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_cache_bytes_by_hand(spec, tp):
    """Per token: 12 attention layers x K and V x 2 KV heads (one a rank from TP 2) x 256, bf16, and each layer's
    indexer key, 128 bf16 a 4-token group (64 B a token, whole on every rank). Per slot: 36 GatedDeltaNet windows of
    (2 x 16 x 128 + 48 x 128) / tp channels x 3, the 12 indexer rings of 4 raw keys x 128, the PLE window of 4 x 2560
    channels x (4 - 1) x 3 (whole on every rank), bf16; 36 float32 states of 48 / tp heads x 128 x 128."""
    r = estimate(spec, ParallelLayout(tp=tp), RuntimeConfig(max_batch=8, max_seq_len=4096), resolve_dtypes(spec)).ranks[0]
    kv_heads = max(2 // tp, 1)
    assert r.kv_bytes_per_token == 12 * 2 * kv_heads * 256 * BF16 + 12 * 128 * BF16 // 4
    assert r.conv_bytes_per_slot == (36 * 10240 // tp * 3 + 12 * 4 * 128 + 10240 * 9) * BF16
    assert r.ssm_bytes_per_slot == 36 * (48 // tp) * 128 * 128 * F32
    keys = next(c for c in r.components if c.decl.key == "indexer.keys")
    assert keys.units == 8 * 4096 and keys.total_bytes == 12 * 8 * 4096 * 128 * BF16 // 4  # 8 whole sequences


def test_ngram_table_rows_are_the_primes_transformers_finds():
    """Qwen4ExpTextNGramEmbedding: head j of PLE layer l takes the (16 l + j + 1)-th prime from the base on, by trial
    division; the 16 of layer 0 sum to 320,001,446 (20,000,003 the first, 20,000,171 the last), padded to 128."""
    def trial(v: int) -> bool:
        return v > 1 and all(v % d for d in range(2, math.isqrt(v) + 1))

    primes = [v for v in range(20_000_000, 20_001_000) if trial(v)]
    assert all(is_prime(v) == trial(v) for v in range(20_000_000, 20_000_400))
    assert (primes[0], primes[15], sum(primes[:16])) == (20_000_003, 20_000_171, 320_001_446)
    assert ngram_table_rows(20_000_000, 16, 0, 128) == 320_001_536
    assert len(primes) >= 32 and ngram_table_rows(20_000_000, 16, 1, 128) == -(-sum(primes[16:32]) // 128) * 128
    assert [is_prime(n) for n in (2, 3, 4, 561, 1_000_000_007, (1 << 61) - 1, (1 << 61) + 1)] == [
        True, True, False, False, True, True, False]


def test_new_weights_by_hand(spec):
    """The indexer: hidden x (4 + 1) x 128 and two 128 norms; the PLE: its 320,001,536 x 160 table, key and value
    projections 2560 x (4 x 2560 + 2560), the 4-tap conv and three norms over 10,240 channels; hyper-connections:
    two gated residuals, each 10,240 -> 320 -> 10,240 and 10,240 -> 4, and their norms."""
    assert KIND_MODULES["indexer"].weights(spec, spec.indexer) == {"proj": 2560 * 5 * 128, "other": 256}
    assert KIND_MODULES["ple"].weights(spec, spec.ple) == {
        "ngram_embedding": 320_001_536 * 160, "proj": 2560 * (10240 + 2560), "other": 10240 * 4 + 3 * 10240}
    assert KIND_MODULES["hc"].weights(spec, spec.hc) == {"proj": 2 * (2 * 10240 * 320 + 10240 * 4), "other": 2 * 10240}
    per_layer = {k: sum(KIND_MODULES[k].weights(spec, getattr(spec, k)).values()) for k in ("indexer", "ple", "hc")}
    assert weights.total_params(spec) - _without_new_kinds(spec) == 12 * per_layer["indexer"] + per_layer["ple"] + \
        48 * per_layer["hc"]


def _without_new_kinds(spec) -> int:
    """The parameters of the same model with its layers' indexer, PLE and hyper-connections taken out."""
    from msgspec.structs import replace

    from mcache.core.spec.model import Layers

    types = ["+".join(k for k in kinds if k not in ("indexer", "ple", "hc")) for kinds in layer_kinds(spec)]
    return weights.total_params(replace(spec, layers=Layers(types=types)))


def test_a_compression_that_splits_a_key_row_is_refused(spec):
    from msgspec.structs import replace

    odd = replace(spec, indexer=replace(spec.indexer, head_dim=3, compress=4))  # 3 values a row, 4 tokens
    with pytest.raises(LayoutError, match=r"indexer\.compress: a divisor of a key row's 3 values, got 4"):
        estimate(odd, ParallelLayout(), RuntimeConfig(max_batch=1, max_seq_len=64), resolve_dtypes(odd))


def test_too_many_ngram_heads_is_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIG, "text_config": {**TEXT, "heads_per_ngram": 5000}}))
    with pytest.raises(SpecError, match=r"text_config\.heads_per_ngram: at most 4096 n-gram heads"):
        import_hf(path)


@pytest.mark.parametrize(("engine", "version", "says"), [
    ("vllm", None, "how vLLM 0.34.0 sizes a QSA indexer's keys and raw-key ring and a PLE conv state is not modelled"),
    ("vllm", "0.28.0", "are not supported for now (vLLM 0.28.0; registered from 0.29.0 on)"),
    ("sglang", "0.5.19", "models/qwen4_exp.py comes with 0.5.20"),
])
def test_engines_refuse_in_one_line(tmp_path, capsys, engine, version, says):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    args = ["size", str(path), "--engine", engine] + (["--engine-version", version] if version else [])
    code = main(args)
    err = capsys.readouterr().err.strip()
    assert code != 0 and says in err and len(err.splitlines()) == 1


def test_the_table_says_a_key_row_serves_four_tokens(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    assert main(["size", str(path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "key_ring" not in line and "indexer" in line
               and "keys" in line)
    assert "1x128 per 4" in row and "768 B" in row


def test_its_first_name_reads_the_same_and_no_engine_registers_it(tmp_path, capsys):
    """Qwen3.8-Flash-Next shipped as `qwen3_8_flash_next` (Qwen3_8FlashNextForConditionalGeneration) before it was
    renamed qwen4_exp; some quantized uploads keep the first name, their text_config the same field for field. mcache
    reads it as qwen4_exp; vLLM and SGLang register the model under its new name only."""
    renamed = {**CONFIG, "model_type": "qwen3_8_flash_next",
               "architectures": ["Qwen3_8FlashNextForConditionalGeneration"],
               "text_config": {**TEXT, "model_type": "qwen3_8_flash_next_text"}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(renamed))
    spec = import_hf(path)
    assert layer_kinds(spec) == layer_kinds(import_hf(HF_CONFIGS_INDEXER / "qwen3.8-flash-next-fp8.json"))
    assert "model_type qwen3_8_flash_next, read as qwen4_exp" in spec.source
    for engine, says in (("vllm", "no release from 0.10.2 to 0.34.0 registers it"),
                         ("sglang", "Cannot find model module. 'Qwen3_8FlashNextForConditionalGeneration'")):
        assert main(["size", str(path), "--engine", engine]) != 0
        assert says in capsys.readouterr().err


def test_the_mtp_layer_keeps_its_indexers_keys_while_it_drafts(spec):
    """The MTP layer is QSA attention too: while it drafts, its KV (2 KV heads x 256, K and V, bf16) and its indexer's
    key (128 bf16 a 4-token group) a token, and its raw-key ring (4 x 128 bf16) a slot, on the last stage."""
    runtime = RuntimeConfig(max_batch=8, max_seq_len=4096, draft_tokens=3, spec_scheme="replay")
    r = estimate(spec, ParallelLayout(), runtime, resolve_dtypes(spec)).ranks[0]
    mtp = {c.decl.name: c.decl.bytes_per_unit for c in r.components if c.decl.kind == "mtp"}
    assert mtp == {"kv": 2 * 2 * 256 * BF16, "keys": 128 * BF16 // 4, "key_ring": 4 * 128 * BF16}
    assert r.kv_bytes_per_token == 13 * 2 * 2 * 256 * BF16 + 13 * 128 * BF16 // 4


@pytest.mark.parametrize(("qsa", "keys"), [("auto", 128 * BF16 // 4), ("bfloat16", 128 * BF16 // 4), ("fp8_e4m3", 128 // 4)])
def test_sglang_keeps_the_compressed_keys_in_the_qsa_indexer_dtype(spec, qsa, keys):
    """SGLang 0.5.22 on, `--qsa-indexer-dtype`: a token's cell at TP 2 is 12 attention layers x K and V x 1 KV head x
    256 bf16, and 12 compressed key rows of 128 values a 4-token group, in bf16 or, with fp8_e4m3, a byte a value."""
    from mcache.core.engines import run_engine
    from mcache.core.engines.common import EngineInputs
    from mcache.core.sizing.gpus import lookup

    inputs = EngineInputs(spec, ParallelLayout(tp=2), *lookup("h200"), None, {"qsa_indexer_dtype": qsa})
    assert run_engine("sglang", inputs, "0.5.23").stages[0].fields["cell_size_bytes"] == 12 * 2 * 256 * BF16 + 12 * keys


@pytest.mark.parametrize(("model", "gpu", "version", "qsa", "says"), [
    ("qwen3.8", "mi300x", "0.5.23", "fp8_e4m3", "--qsa-indexer-dtype fp8_e4m3 requires a CUDA SM90/SM100 GPU"),
    ("qwen3.8", "rtx-pro-6000", "0.5.23", "fp8_e4m3", "--qsa-indexer-dtype fp8_e4m3 requires a CUDA SM90/SM100 GPU"),
    ("qwen3-next", "h200", "0.5.22", "bfloat16", "--qsa-indexer-dtype bfloat16 needs a model with a compressed QSA"),
    ("qwen3.8", "h200", "0.5.21", "bfloat16", "--qsa-indexer-dtype: not a setting of SGLang 0.5.21"),
    ("qwen3.8", "h200", "0.5.23", "fp16", "--qsa-indexer-dtype: one of auto, bfloat16, fp8_e4m3, got 'fp16'"),
])
def test_sglang_refuses_a_qsa_indexer_dtype_as_it_does(capsys, model, gpu, version, qsa, says):
    """fp8 keys off CUDA SM 9 / SM 10 (model_overrides/qwen4_exp.py), any but auto on a hybrid without QSA (its pool,
    kv_cache_configurator.py), the flag before 0.5.22 and a value outside its choices: one line, a non-zero exit."""
    path = str(HF_CONFIGS_INDEXER / "qwen3.8-flash-next-fp8.json") if model == "qwen3.8" else "qwen3-next-80b-a3b"
    args = ["size", path, "--engine", "sglang", "--engine-version", version, "--gpu", gpu, "--tp", "4",
            "--qsa-indexer-dtype", qsa]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
