"""`mcache size` headlines, the exit-3 verdict, and `--engine` through the CLI: options, output contract, errors."""

from __future__ import annotations

import json
import re

import pytest
from cli_util import one_line
from engines_util import config_spec, run
from paths import HF_CONFIGS

from mcache.cli.main import main
from mcache.core.engines import loaders, vllm
from mcache.core.hf import import_hf


def size_json(capsys, *args: str, code: int = 0) -> dict:
    assert main(["size", *args, "--format", "json"]) == code
    return json.loads(capsys.readouterr().out)


def size_text(capsys, *args: str, code: int = 0) -> tuple[str, str]:
    assert main(["size", *args]) == code
    out = capsys.readouterr()
    return out.out, out.err


def test_neutral_headline_sizes_the_pool_by_memory(capsys):
    report = size_json(capsys, "nemotron-h-8b", "--gpu", "h200")
    cap = report["capacity"]["ranks"][0]
    assert report["runtime"]["max_batch_source"] == "memory"
    assert cap["max_sequences"] == cap["sequences_if_resized"] == report["runtime"]["max_batch"]
    assert cap["binding"] == "KV"  # 128 MiB of KV per 8K sequence against 49.41 MiB of state
    out, _ = size_text(capsys, "nemotron-h-8b", "--gpu", "h200")
    line = next(line for line in out.splitlines() if line.startswith("mcache's neutral model fits "))
    assert line.startswith(f"mcache's neutral model fits {cap['max_sequences']} sequences of 8192 tokens per replica "
                           "(TP × PP = 1 GPU) on NVIDIA H200 (KV-bound")


def test_neutral_headline_with_a_fixed_pool_says_what_memory_would_allow(capsys):
    report = size_json(capsys, "nemotron-h-8b", "--gpu", "h200", "--max-batch", "64")
    cap = report["capacity"]["ranks"][0]
    assert (cap["max_sequences"], cap["binding"]) == (64, "state slots")
    out, _ = size_text(capsys, "nemotron-h-8b", "--gpu", "h200", "--max-batch", "64")
    assert (f"fits 64 sequences of 8192 tokens per replica (TP × PP = 1 GPU) on NVIDIA H200 (bound by --max-batch: 64 "
            "slots; memory "
            f"would hold {cap['sequences_if_resized']})") in out


def test_without_a_gpu_the_table_says_how_to_get_capacity(capsys):
    out, _ = size_text(capsys, "nemotron-h-8b")
    assert "--gpu h200" in out.splitlines()[-1]


def test_a_model_that_does_not_fit_exits_3_naming_the_smallest_tp(capsys):
    out, err = size_text(capsys, "minimax-text-01", "--gpu", "h200", code=3)
    assert "fits 0 sequences" in out
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.search(r"MiniMax-Text-01 does not fit on NVIDIA H200 at --tp 1 --pp 1: the weights \(.* per rank\) exceed", err)
    assert err.rstrip().endswith("it fits at --tp 8")


def test_the_smallest_layout_is_searched_up_to_64_gpus(capsys):
    _, err = size_text(capsys, "minimax-text-01", "--gpu", "rtx-4090", code=3)
    assert err.rstrip().endswith("it fits at --tp 16 --pp 3")  # 849.53 GiB of weights over 48 cards of 19.59 GiB usable
    _, err = size_text(capsys, "minimax-text-01", "--gpu-memory", "4GiB", code=3)
    assert err.rstrip().endswith("no layout of up to 64 GPUs (TP x PP) fits")


def test_vllm_json_contract(capsys):
    report = size_json(capsys, "qwen3.5-27b", "--engine", "vllm", "--gpu", "h200", "--num-speculative-tokens", "7",
                       "--mamba-ssm-cache-dtype", "bfloat16", "--max-model-len", "32768")
    assert report["schema_version"] == 2
    eng = report["engine"]
    assert eng["name"] == "vllm" and eng["settings"]["num_speculative_tokens"] == 7
    assert eng["sources"]["num_speculative_tokens"] == "given" and eng["sources"]["max_num_seqs"] == "default"
    assert eng["sources"]["weights_bytes"].startswith("assumed")
    st = eng["stages"][0]
    for key in ("max_running_requests", "startup_error", "log", "attention_block_size", "state_page_bytes",
                "state_page_padded_bytes", "state_page_padding_pct", "group_size", "padding_layers", "num_blocks",
                "blocks_per_request", "max_concurrency", "kv_cache_tokens"):
        assert key in st, key
    assert (st["attention_block_size"], st["state_page_padding_pct"]) == (448, 3.23)
    assert isinstance(st["max_running_requests"], int) and st["startup_error"] is None
    assert any(line.startswith("GPU KV cache size: ") for line in st["log"])


def test_vllm_without_a_gpu_keeps_the_memory_free_figures(capsys):
    st = size_json(capsys, "qwen3.5-27b", "--engine", "vllm")["engine"]["stages"][0]
    assert st["attention_block_size"] == 832 and st["group_size"] == 16
    assert st["num_blocks"] is None and st["max_running_requests"] is None and st["max_concurrency"] is None


def test_kv_cache_memory_takes_a_size(capsys):
    st = size_json(capsys, "qwen3.5-27b", "--engine", "vllm", "--kv-cache-memory", "6.01GiB",
                   "--max-model-len", "32768", "--max-num-seqs", "64")["engine"]["stages"][0]
    assert st["available_kv_cache_memory_bytes"] == int(6.01 * (1 << 30))
    assert st["num_blocks"] == int(6.01 * (1 << 30)) // (16 * 832 * 4096)


def test_sglang_and_trtllm_json_carry_their_figures(capsys):
    sg = size_json(capsys, "qwen3-next-80b-a3b", "--engine", "sglang", "--gpu", "h200", "--tp", "4")["engine"]
    assert {"max_total_num_tokens", "max_mamba_cache_size"} <= set(sg["stages"][0])
    assert sg["stages"][0]["max_running_requests"] > 0
    trt = size_json(capsys, "nemotron-h-8b", "--engine", "trtllm", "--gpu", "h200", "--max-batch-size", "256")["engine"]
    assert {"max_batch_size", "max_tokens"} <= set(trt["stages"][0])
    assert trt["settings"]["max_batch_size"] == 256 and trt["stages"][0]["max_batch_size"] == 256


def test_engine_table_prints_the_headline_and_the_log(capsys):
    out, _ = size_text(capsys, "nemotron-h-8b", "--engine", "vllm", "--gpu", "h200", "--max-model-len", "8192")
    assert re.search(rf"^vLLM {re.escape(vllm.VERSIONS[-1])} runs \d+ sequences of 8192 tokens per replica "
                     r"\(TP × PP = 1 GPU\) on NVIDIA H200 \(bound by ", out, re.M)
    assert "vLLM would log:" in out and "  Updating mamba_ssm_cache_dtype to 'float32' for NemotronH model" in out


def test_kv_cache_manager_picks_trtllms_manager_at_each_version(capsys):
    """--kv-cache-manager sets KvCacheConfig.use_kv_cache_manager_v2: main's default auto takes V2 for Nemotron-H;
    the 1.2 release (a bool, v1 by default) allocates max_batch_size state slots outside the fraction."""
    def trt(*args):
        return size_json(capsys, "nemotron-h-8b", "--engine", "trtllm", "--gpu", "h200", "--context", "8192",
                         *args)["engine"]

    main_auto, main_v1 = trt(), trt("--kv-cache-manager", "v1")
    assert main_auto["settings"]["use_kv_cache_manager_v2"] == "auto"
    assert main_auto["stages"][0]["cache_manager"] == "MambaHybridCacheManagerV2"
    assert main_v1["stages"][0]["cache_manager"] == "CppMambaHybridCacheManager"
    release = trt("--engine-version", "1.2.0")
    assert release["version"] == "1.2.0" and release["stages"][0]["cache_manager"] == "MambaHybridCacheManager"
    assert release["settings"]["use_kv_cache_manager_v2"] == "v1"
    assert (release["max_running_requests"], main_v1["max_running_requests"], main_auto["max_running_requests"]) == (
        176, 96, 96)


def test_trtllm_that_cannot_start_exits_3(capsys):
    out, err = size_text(capsys, "qwen3.5-27b", "--engine", "trtllm", "--gpu", "h200", code=3)
    assert ("TensorRT-LLM main@151c21c would not start on NVIDIA H200: The V2 Mamba GPU cache quota is too small for "
            "live recurrent states and attention pages") in out
    assert err.count("\n") == 1
    assert "does not fit on NVIDIA H200 at --tp 1 --pp 1 under TensorRT-LLM" in err
    assert err.rstrip().endswith("it fits at --tp 2")


@pytest.mark.parametrize(("args", "needle"), [
    (["qwen3.5-27b", "--max-num-seqs", "8"], "--max-num-seqs: an option of vLLM (add --engine vllm)"),
    (["qwen3.5-27b", "--engine", "vllm", "--mem-fraction-static", "0.8"], "--mem-fraction-static: an option of SGLang, not of vLLM"),
    (["qwen3.5-27b", "--engine", "vllm", "--max-batch", "8"], "--max-batch: vLLM has no such setting (use --max-num-seqs)"),
    (["qwen3.5-27b", "--engine", "sglang", "--snapshot-slots", "2"], "--snapshot-slots: sizes mcache's neutral pool"),
    (["qwen3.5-27b", "--engine", "vllm", "--kv-cache-dtype", "fp4"], "--kv-dtype: one of auto, float16"),
    (["qwen3.5-27b", "--engine", "vllm", "--kv-cache-memory", "lots"], "--kv-cache-memory: a size with its unit, such as 141GiB"),
    (["qwen3.5-27b", "--engine", "vllm", "--gpu-memory-utilization", "1.5", "--gpu", "h200"], "--utilization: a fraction"),
    (["qwen3.5-27b", "--engine", "vllm", "--verify"], "--verify: checks mcache's neutral pools"),
    (["qwen3.5-27b", "--engine", "trtllm", "--kv-cache-manager", "v3"], "--kv-cache-manager"),
    (["nemotron-h-8b", "--engine", "trtllm", "--engine-version", "1.2.0", "--kv-cache-manager", "auto"],
     "--kv-cache-manager: v1 or v2 at TensorRT-LLM 1.2.0"),
    (["qwen3.5-27b", "--engine", "vllm", "--kv-cache-manager", "v2"], "--kv-cache-manager: an option of TensorRT-LLM"),
    (["qwen3.5-27b", "--engine", "vllm", "--tp", "3"], "attention.num_kv_heads: 4 cannot be split over tp=3"),
    (["qwen3.5-27b", "--weights", "lots"], "--weights: "),
])
def test_engine_option_errors_are_one_line(args, needle, capsys):
    assert main(["size", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_every_option_field_is_spelled_as_an_option_of_mcache_size():
    """The engines' tables name `SizeOptions` fields, and the one function that spells a field's flag gives an
    option `mcache size` has for each."""
    from importlib import import_module

    import typer

    from mcache.cli.main import build_app
    from mcache.cli.options import flag
    from mcache.core.engines import NAMES
    from mcache.core.engines.options import NEUTRAL
    from mcache.core.options import SizeOptions

    command = typer.main.get_command(build_app("size")).commands["size"]
    flags = {name for param in command.params for name in param.opts}
    fields = set(SizeOptions.__struct_fields__)
    assert {flag(field) for field in fields} <= flags
    assert set(NEUTRAL) <= fields
    for name in NAMES:
        engine = import_module(f"mcache.core.engines.{name}")
        assert set(engine.FLAGS) | set(engine.INSTEAD) | set(engine.INSTEAD.values()) <= fields, name


def test_sglang_and_trtllm_say_they_size_windowed_layers_at_full_length():
    """PLaMo-2 windows every attention layer: SGLang's SWA pool and TensorRT-LLM's per-window pools are not
    modelled, and their runs say so; vLLM's needs no caveat: its models/plamo2.py builds that attention without the
    window (full-length, `WINDOWLESS_ARCHS`) until PLaMo-2 left it after 0.26."""
    plamo = config_spec("plamo-2-1b")
    for engine in ("sglang", "trtllm"):
        caveats = run(engine, plamo, "h200").caveats
        assert [c for c in caveats if "sliding_attention" in c and "upper bound" in c], caveats
    assert run("vllm", plamo, "h200").caveats == []
    assert run("sglang", config_spec("qwen3.5-27b"), "h200").caveats == []


def test_every_engine_says_it_sized_a_spec_naming_no_architecture_by_its_layer_kinds():
    """A hand-written hybrid spec (or a mamba_ssm-format config) names no architecture: whether an engine loads it is
    not checked, and each run says so; a spec that names one gets no such caveat."""
    from mcache.core.load import parse_spec

    spec = parse_spec("""
name: hand-made
source: test
dtype: bfloat16
hidden_size: 256
vocab_size: 1000
num_layers: 4
layers: {pattern: "M*M*"}
mamba2: {num_heads: 8, head_dim: 32, state_size: 16, n_groups: 1}
attention: {num_heads: 4, num_kv_heads: 2, head_dim: 64}
""", "hand.yaml")
    for engine, title in (("vllm", "vLLM"), ("sglang", "SGLang"), ("trtllm", "TensorRT-LLM")):
        caveats = run(engine, spec, "h200").caveats
        assert f"{title}: the spec names no architecture, so whether {title} loads the model is not checked" in \
            " ".join(caveats), (engine, caveats)
        assert not [c for c in run(engine, config_spec("nemotron-h-8b-base-8k"), "h200").caveats if "no architecture" in c]


def test_help_states_each_engines_defaults_as_its_module_names_them(capsys, monkeypatch):
    """`mcache size --help` writes the engines' defaults as literals (it starts without loading the engine modules):
    each literal is the engine module's named constant."""
    from mcache.core.engines import sglang, trtllm, vllm

    monkeypatch.setenv("COLUMNS", "400")
    assert main(["size", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    for phrase in (f"max_batch_size (default {trtllm.DEFAULT_MAX_BATCH_SIZE})",
                   f"(32; vLLM {vllm.DEFAULT_BLOCK_SIZE}, SGLang page {sglang.DEFAULT_PAGE_SIZE}, TensorRT-LLM "
                   f"{trtllm.DEFAULT_TOKENS_PER_BLOCK})", f"(0.9; vLLM {vllm.EXTENSIBLE_UTILIZATION})",
                   f"attention backend ({vllm.DEFAULT_KERNEL_BLOCK_SIZE})",
                   f"({vllm.DEFAULT_MAX_NUM_SEQS_BIG_GPU} on {vllm.BIG_GPU_BYTES >> 30} GiB+ GPUs, else {vllm.DEFAULT_MAX_NUM_SEQS})",
                   f"({vllm.DEFAULT_MAX_NUM_BATCHED_TOKENS_BIG_GPU} on an H100/H200)",
                   f"token pool ({sglang.DEFAULT_MAMBA_FULL_MEMORY_RATIOS[-1][1]})",  # 0.2 at 0.5.3.post2 alone
                   f"profiled peak ({trtllm.DEFAULT_FREE_GPU_MEMORY_FRACTION})"):
        assert phrase in text, phrase


def test_the_neutral_answer_ends_with_each_engine_at_its_defaults(capsys):
    """Issue 28: the capacity section names the neutral model as such and ends with each engine's run (its defaults,
    the same GPU, layout and context), the figures the one `size_deployment` gives with `--engine`."""
    report = size_json(capsys, "nemotron-h-8b", "--gpu", "h200")
    engines = report["capacity"]["engines"]
    assert [(e["name"], e["version"]) for e in engines] == [("vllm", vllm.VERSIONS[-1]), ("sglang", "0.5.23"), ("trtllm", "main@151c21c")]
    for e in engines:
        alone = size_json(capsys, "nemotron-h-8b", "--gpu", "h200", "--engine", e["name"], "--context", "8192")["engine"]
        assert alone["version"] == e["version"] and e["max_running_requests"] == alone["max_running_requests"]
        assert e["startup_error"] is None and e["binding"] == alone["stages"][0]["binding"]
    out, _ = size_text(capsys, "nemotron-h-8b", "--gpu", "h200")
    last = out.splitlines()[-1]
    assert last == "engines (their defaults): " + " · ".join(
        f"{t} {e['version']}: {e['max_running_requests']} ({e['binding']})"
        for t, e in zip(("vLLM", "SGLang", "TensorRT-LLM"), engines, strict=True))
    md, _ = size_text(capsys, "nemotron-h-8b", "--gpu", "h200", "--format", "markdown")
    assert md.rstrip().splitlines()[-1] == last


def test_an_engine_that_would_not_start_says_so_beside_the_neutral_figure(capsys):
    report = size_json(capsys, "qwen3.5-27b", "--gpu", "h200")
    trt = report["capacity"]["engines"][2]
    assert trt["max_running_requests"] is None and trt["startup_error"].startswith("The V2 Mamba GPU cache quota")
    out, _ = size_text(capsys, "qwen3.5-27b", "--gpu", "h200")
    assert "TensorRT-LLM main@151c21c: does not start: The V2 Mamba GPU cache quota" in out.splitlines()[-1]


def test_a_replica_is_tp_x_pp_gpus_with_the_per_gpu_figure_beside_it(capsys):
    report = size_json(capsys, "nemotron-h-8b", "--gpu", "h200", "--tp", "2", "--pp", "2")
    cap = report["capacity"]
    n = cap["ranks"][cap["tightest_stage"]]["max_sequences"]
    assert (cap["gpus_per_replica"], cap["max_sequences"], cap["max_sequences_per_gpu"]) == (4, n, round(n / 4, 2))
    out, _ = size_text(capsys, "nemotron-h-8b", "--gpu", "h200", "--tp", "2", "--pp", "2")
    assert f"mcache's neutral model fits {n} sequences of 8192 tokens per replica (TP × PP = 4 GPUs; {round(n / 4, 1):,g} per GPU)" in out
    assert not [line for line in out.splitlines() if "fits" in line and "per rank" in line]
    assert "engines" not in size_json(capsys, "nemotron-h-8b", "--tp", "2") and size_json(capsys, "nemotron-h-8b")["capacity"] is None


def test_an_engine_with_a_shorter_max_length_answers_at_its_own_length(capsys):
    """The config names no length: vLLM and SGLang run at 2048 tokens, below the neutral model's 8192, so beside the
    neutral figure each answers at its own max model length and says so (not 'does not start')."""
    spec = str(HF_CONFIGS / "falcon-mamba-7b.json")
    engines = size_json(capsys, spec, "--gpu", "h200")["capacity"]["engines"]
    assert [(e["name"], e["context"], e["startup_error"] is None) for e in engines[:2]] == [("vllm", 2048, True),
                                                                                          ("sglang", 2048, True)]
    out, _ = size_text(capsys, spec, "--gpu", "h200")
    assert out.splitlines()[-1].count("at its max model length of 2048 tokens") == 2


def test_an_attention_free_model_under_sglang_says_why_its_token_pool_binds(capsys):
    """SGLang's pool configurator gives a model without attention a token pool of its context length (2,048 tokens for
    state-spaces/mamba-1.4b-hf) and runs at most half as many requests: the headline says so, not a bare token count."""
    assert main(["size", str(HF_CONFIGS.parent / "hf_configs_extra" / "mamba-1.4b-hf.json"), "--gpu", "h200",
                 "--engine", "sglang"]) == 0
    assert ("runs 1024 sequences of 2048 tokens per replica (TP × PP = 1 GPU) on NVIDIA H200 (bound by the token pool: "
            "2,048 tokens, the context length SGLang gives the pool of a model without attention, which runs half as "
            "many requests)") in capsys.readouterr().out


RAW = HF_CONFIGS.parent / "hf_configs_extra"


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_a_mamba_ssm_config_is_refused_as_autoconfig_refuses_it(engine, capsys):
    """vLLM (transformers_utils/config.py get_config) and TensorRT-LLM (config_utils.py load_pretrained_config) hand a
    config without a model type to transformers' AutoConfig, which refuses it: at every release, a raw mamba_ssm config
    does not load (its transformers-format conversion does); before, mcache sized it as a hybrid of its layer kinds."""
    line = one_line(["size", str(RAW / "mamba-130m-mamba-ssm.json"), "--gpu", "h100", "--engine", engine], capsys, 3)
    assert ("Unrecognized model in mamba-130m-mamba-ssm. Should have a `model_type` key in its config.json; it loads on "
            "SGLang 0.5.20 to 0.5.23") in line


def test_sglang_builds_a_mamba_ssm_config_as_mamba1_from_0_5_20():
    """utils/hf_transformers/config.py _try_load_raw_mamba_config (0.5.20 on): MambaForCausalLM of d_model, n_layer and
    ssm_cfg.d_state; AutoConfig's refusal before; a Mamba2 checkpoint's layers do not fit that class."""
    mamba1, mamba2 = (import_hf(RAW / f"{name}-130m-mamba-ssm.json") for name in ("mamba", "mamba2"))
    assert "Unrecognized model in mamba-130m-mamba-ssm." in run("sglang", mamba1, "h100", version="0.5.19").stages[0].startup_error
    got = run("sglang", mamba1, "h100", version="0.5.20")
    assert got.stages[0].startup_error is None
    assert any("read as MambaForCausalLM" in c for c in got.caveats)
    refused = run("sglang", mamba2, "h100", version="0.5.23").stages[0].startup_error
    assert "this checkpoint's mamba2 layers do not fit it, so its weights do not load" in refused
    assert loaders(mamba1) == ["SGLang 0.5.20 to 0.5.23"] and loaders(mamba2) == []
