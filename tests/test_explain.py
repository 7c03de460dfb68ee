"""`mcache explain LOG` (issue 31): the public boot logs of tests/data/engine_logs read back figure by figure, each
one mcache can size reproduced or its disagreement recorded with its cause, hand-made variants of every log format
(prefixes, timestamps, colour, interleaved ranks, wrapping, a truncated log), the what-if, JSON and bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml
from cli_util import one_line
from msgspec.structs import replace
from paths import HERE, HF_CONFIGS

from mcache.cli.main import main
from mcache.core.logs import read_log
from mcache.core.logs.lines import clean_lines

LOGS = HERE / "data" / "engine_logs"
SOURCES = yaml.safe_load((LOGS / "SOURCES.yaml").read_text())["logs"]
QWEN35_27B = str(HF_CONFIGS / "qwen3.5-27b.json")  # the Qwen3.5/3.6/3.8-27B geometry: 48 GDN + 16 attention layers
QWEN36_35B = str(HF_CONFIGS / "qwen3.6-35b-a3b.json")
V033 = ["--engine-version", "0.33.0"]  # a release main models, so the tests do not follow the newest one


def explain(argv: list[str], capsys) -> tuple[int, dict]:
    code = main(["explain", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def verdicts(data: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in data["comparisons"]:
        out.setdefault(c["figure"], set()).add(c["verdict"])
    return out


# --- every figure SOURCES.yaml lists is read back ---------------------------------------------------------------

# SOURCES.yaml's figure names -> (where the reader puts it, its key); `None`: a figure the reader leaves alone, and why
READ = {
    "available_kv_cache_memory_gib": ("measured", "available_kv_cache_memory"),
    "gpu_kv_cache_size_tokens": ("figure", "kv_cache_tokens"),
    "kv_padding_layers": ("figure", "padding_layers"),
    "kv_padding_waste_max_pct": ("figure", "padding_waste_pct"),
    "attention_block_size_tokens": ("figure", "attention_block_size"),
    "mamba_page_padding_pct": ("figure", "state_page_padding_pct"),
    "model_loading_gib_per_rank": ("measured", "model_loading"),
    "kv_cache_block_size": ("setting", "block_size"),  # the attention backend's block: a setting of the run
    "mla_kv_block_size": ("setting", "block_size"),
    "mamba_cache_blocks": ("figure", "mamba_cache_blocks"),
    "max_num_seqs": ("setting", "max_num_seqs"),
    "max_mamba_cache_size": ("figure", "max_mamba_cache_size"),
    "mamba_conv_state_gb": ("figure", "conv_state_gb"),
    "mamba_ssm_state_gb": ("figure", "ssm_state_gb"),
    "intermediate_ssm_state_cache_gb": ("figure", "intermediate_ssm_state_gb"),
    "kv_tokens": ("figure", "kv_tokens"),
    "k_size_gb": ("figure", "k_size_gb"),
    "v_size_gb": ("figure", "v_size_gb"),
    "kv_size_gb": ("figure", "kv_size_gb"),
    "target_kv_tokens": ("figure", "kv_tokens"),
    "target_k_size_gb": ("figure", "k_size_gb"),
    "target_v_size_gb": ("figure", "v_size_gb"),
    "draft_kv_tokens": ("figure", "draft_kv_tokens"),
    "draft_k_size_gb": ("figure", "draft_k_size_gb"),
    "draft_v_size_gb": ("figure", "draft_v_size_gb"),
    "max_total_num_tokens": ("figure", "max_total_num_tokens"),
    "max_running_requests": ("figure", "max_running_requests"),
    "context_len": ("setting", "context_length"),
    "state_slots_per_request": ("figure", "state_slots_per_request"),
    "draft_weights_gb": ("measured", "weights"),
    "kv_cache_dtype": ("setting", "kv_cache_dtype"),
    "peak_memory_gib": ("measured", "peak_memory"),
    "weights_inside_torch_gib": ("measured", "weights"),
    "kv_cache_budget_gib": ("figure", "kv_cache_budget_gib"),
    "estimated_kv_cache_gib": ("figure", "estimated_kv_cache_gib"),
    "allocated_kv_cache_gib": ("figure", "allocated_kv_cache_gib"),
    "max_tokens": ("figure", "max_tokens"),
    "estimation_max_tokens": ("figure", "estimation_max_tokens"),
    "estimated_max_model_len_tokens": ("figure", "estimated_max_model_len"),
    # figures SOURCES.yaml lists that are not cache sizing: what is left after the pools, a user's request
    "available_gpu_mem_gb_after_pool": None, "avail_mem_gb_after_pools": None, "avail_mem_gb_after_weights": None,
    "draft_avail_mem_gb_after_weights": None, "kv_budget_reserved_for_multimodal_gb": None,
    "max_running_requests_requested": None,
}
# the log's own spelling of a setting SOURCES.yaml names by its torch dtype, and a capped request count
SPELLED = {("kv_cache_dtype", "float8_e4m3fn"): "fp8_e4m3", ("kv_cache_dtype", "bfloat16"): None}


def _values(log, where: str, key: str) -> list:
    if key == "max_running_requests":  # SGLang's summary line, or its cap line where the excerpt has only that
        return [p.value for p in log.figures if p.key in (key, "max_running_requests_capped")]
    if where == "measured":
        return [float(m.shown.split()[0]) for m in log.measured if m.name == key]
    if where == "setting":
        return [log.settings.get(key)]
    return [p.value for p in log.figures if p.key == key]


@pytest.mark.parametrize("entry", SOURCES, ids=[e["file"] for e in SOURCES])
def test_every_figure_a_public_log_prints_is_read_back(entry):
    log = read_log((LOGS / entry["file"]).read_text(), entry["file"])
    assert log.engine == entry["engine"]
    for name, expected in (entry.get("figures") or {}).items():
        if name == "max_concurrency":  # checked below, with its tokens per request
            continue
        assert name in READ, f"{name}: a figure of SOURCES.yaml the test does not map"
        if READ[name] is None:
            continue
        where, key = READ[name]
        if isinstance(expected, dict | list):  # per rank ({TP0: 6.23, ...}), or each line of several specs ([2, 4])
            expected = sorted(expected.values() if isinstance(expected, dict) else expected)
            assert sorted(set(_values(log, where, key))) == sorted(set(expected)), name
            continue
        if (name, expected) in SPELLED:
            if SPELLED[(name, expected)] is None:  # "Using KV cache dtype: torch.bfloat16": auto, not a setting
                continue
            expected = SPELLED[(name, expected)]
        assert expected in _values(log, where, key), (name, _values(log, where, key))
    concurrency = (entry.get("figures") or {}).get("max_concurrency")
    if concurrency:
        assert concurrency["x"] in [p.value for p in log.figures if p.key == "max_concurrency"]
        assert log.settings["max_model_len"] == concurrency["tokens_per_request"]


# --- the logs mcache sizes: reproduced, or the finding and its cause --------------------------------------------

# SOURCES.yaml's `explain` block of each log: the options that complete what the excerpt does not show (each from the
# log's other lines or its thread, the URL in `from`), and the verdict of every figure the command compares
VERDICTS = {"agree": "agree", "within": "agree within the measured inputs' rounding", "differ": "differ",
            "not modelled": "not modelled"}
SIZED = [e for e in SOURCES if e["explain"]["status"] != "not sized"]


def _model(name: str) -> str:
    """A config under tests/data/hf_configs by its name, or a spec or config under tests/data by its path."""
    return str(HERE / "data" / name) if name.endswith((".yaml", ".json")) else str(HF_CONFIGS / f"{name}.json")


def _argv(entry: dict) -> list[str]:
    x = entry["explain"]
    return [str(LOGS / entry["file"]), "--model", _model(x["model"]), *x["args"]]


@pytest.mark.parametrize("entry", SIZED, ids=[e["file"] for e in SIZED])
def test_a_public_log_is_reproduced_or_its_finding_has_a_cause(entry, capsys):
    x = entry["explain"]
    assert x["from"] and "--engine-version" in x["args"]  # where the options came from, and the release: never a guess
    code, data = explain(_argv(entry), capsys)
    assert verdicts(data) == {figure: {VERDICTS[v]} for figure, v in x["verdicts"].items()}
    differ = sum(c["verdict"] == "differ" for c in data["comparisons"])
    if x["status"] == "reproduced":
        assert (code, data["findings"], differ) == (0, 0, 0)
        return
    assert x["status"] == "finding" and x["cause"]
    assert code == 1 and data["findings"] == differ > 0
    if x.get("note"):  # mcache gives no figure: its note says why (the engine's own start-up error)
        assert all(x["note"] in c["note"] for c in data["comparisons"] if c["verdict"] == "differ" and c["mcache"] is None)


NOT_SIZED = [e for e in SOURCES if e["explain"]["status"] == "not sized"]


@pytest.mark.parametrize("entry", NOT_SIZED, ids=[e["file"] for e in NOT_SIZED])
def test_a_log_that_cannot_be_sized_says_why_in_one_line(entry, capsys):
    x = entry["explain"]
    assert x["why"]
    # as a user runs it: with the model and the options its thread states where the entry gives them (a release mcache
    # does not model is refused however complete the command is), else the bare log
    argv = _argv(entry) if "model" in x else [str(LOGS / entry["file"])]
    assert x["says"] in one_line(["explain", *argv], capsys)


def test_at_least_15_public_logs_are_reproduced_figure_for_figure():
    reproduced = [e for e in SOURCES if e["explain"]["status"] == "reproduced"]
    per_engine = {engine: sum(e["engine"] == engine for e in reproduced) for engine in ("vllm", "sglang", "trtllm")}
    assert len(reproduced) >= 15
    # every engine has one at least; TensorRT-LLM's are pure-attention boots (no public hybrid boot prints its memory)
    assert min(per_engine.values()) >= 1, per_engine
    assert all(e["explain"]["status"] in ("reproduced", "finding", "not sized") for e in SOURCES)
    assert len(SOURCES) >= 35


# without --model: a log that names no model, or a path on the author's machine, is one line each
NO_MODEL = {
    "vllm/qwen36-27b-fp8-2x3090-dual-max-fp8kv.log": "does not name the model",
    "sglang/qwen38-27b-nvfp4-rtx5090-dflash12-mmcs4.log": "does not name the model",
    "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log": "is not here",
    "vllm/qwen36-27b-int4-autoround-2x3090-mtp-p2p-on.log": "is not here",
}


@pytest.mark.parametrize("name", sorted(NO_MODEL))
def test_a_log_without_its_model_says_how_to_give_it(name, capsys):
    assert NO_MODEL[name] in one_line(["explain", str(LOGS / name)], capsys)


def test_the_wrong_release_is_a_finding(capsys):
    # mcache's vLLM 0.33 profile takes FlashInfer's GDN prefill on any GPU (a checkpoint block per request and 64-token
    # alignment); the log's vLLM (0.24.0, RTX 5090) runs Triton's: 296 blocks of 2112 tokens, not 299 of 2096
    code, data = explain([str(LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log"), "--model", QWEN36_35B,
                          *V033], capsys)
    assert code == 1 and verdicts(data) == {"kv_cache_tokens": {"differ"}, "max_concurrency": {"differ"}}


def test_a_boot_that_started_where_mcaches_run_stops_is_a_finding(capsys):
    """The gfx1151 boot without the batch defaults its ROCm build took (256 sequences: amdsmi's VRAM total, under 70
    GiB): mcache takes 1,024 for the 80 GiB pool and stops at vLLM's Mamba-block check, while the log's memory summary
    after the CUDA graphs (line 6, before 'init engine ... took') shows the engine past it: both figures agree, and the
    start is a finding."""
    log = str(LOGS / "vllm/qwen38-27b-bf16-gfx1151-triton-262k-0.28dev.log")
    code, data = explain([log, "--model", str(HF_CONFIGS / "qwen3.5-27b.json"), "--engine-version", "0.28.0"], capsys)
    assert code == 1 and verdicts(data) == {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"},
                                            "starts": {"differ"}}
    starts = next(c for c in data["comparisons"] if c["figure"] == "starts")
    assert starts["line"] == 6 and "exceeds available Mamba cache blocks (408)" in starts["note"]
    assert read_log((LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log").read_text()).started_line is None


@pytest.mark.parametrize(("log", "line"), [
    ("vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log", "(APIServer pid=1) INFO 06-01 [api_server.py:677] Starting "
                                                          "vLLM server on http://0.0.0.0:8000"),
    ("vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log", "(APIServer pid=1) INFO:     Application startup complete."),
    ("vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log", "(EngineCore pid=1) INFO 06-01 [gpu_worker.py:436] Free memory on "
     "device (30.58/31.36 GiB) on startup. Desired GPU memory utilization is (0.9, 28.22 GiB)."),
    ("sglang/" + next(e["file"].split("/", 1)[1] for e in SOURCES if e["engine"] == "sglang"),
     "[2026-01-01 00:00:00] The server is fired up and ready to roll!"),
])
def test_the_line_that_shows_an_engine_started_is_found(log, line):
    text = (LOGS / log).read_text().rstrip("\n")
    assert read_log(text).started_line is None
    assert read_log(text + "\n" + line).started_line == len(text.splitlines()) + 1


# --- what-ifs ----------------------------------------------------------------------------------------------------

def test_a_whatif_on_one_boot_answers_what_the_other_boot_logged(capsys):
    # two boots of one model, GPU and flags; run2 measured 6.01 GiB, run1 5.98 GiB: run2's log with run1's memory
    # must print run1's figures
    run1 = read_log((LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log").read_text())
    code, data = explain([str(LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log"), "--model", QWEN36_35B,
                          "--gdn-prefill-backend", "triton", "--kv-cache-memory", "5.98GiB", *V033], capsys)
    assert code == 0 and list(data["whatif"]["options"]) == ["kv_cache_memory"]
    lines = "\n".join(data["whatif"]["engine"]["stages"][0]["log"])
    for p in run1.figures:
        assert p.shown in lines
    assert data["given"] == {"gdn_prefill_backend": "triton"}


def _completed(name: str, **settings):
    """The log with the settings its thread states and its excerpt cut off (vLLM's names), as the args line would have
    shown them: a what-if on top of them changes only what it names (the command takes a setting the log does not
    show as completing it, so a what-if of one is made here, through the API the command calls)."""
    log = read_log((LOGS / name).read_text(), name)
    return replace(log, settings={**log.settings, **settings})


def _whatif(log, tp: int, gpu_gib: int, version: str, model: str = QWEN35_27B, **options):
    from mcache.core.explain import explain as explain_log
    from mcache.core.load import load_spec
    from mcache.core.options import SizeOptions
    from mcache.core.sizing.layout import ParallelLayout

    return explain_log(log, load_spec(model), model, ParallelLayout(tp=tp), ("GPU", gpu_gib << 30), version,
                       SizeOptions(**options))


def test_a_whatif_of_the_kv_dtype_answers_the_boot_that_ran_it():
    # club-3090 #594 and #602: Qwen3.6-27B-FP8 on 2x RTX 3090, vLLM 0.24.0, TP 2, MTP 3, prefix caching, 2 sequences;
    # fp8 KV measured 5.33 GiB and logged 300,220 tokens; int8_per_token_head KV measured 5.23 GiB and logged 289,661
    int8 = read_log((LOGS / "vllm/qwen36-27b-fp8-2x3090-dual-max-int8kv-0.24.0.log").read_text())
    fp8 = _completed("vllm/qwen36-27b-fp8-2x3090-dual-max-fp8kv.log", kv_cache_dtype="fp8", enable_prefix_caching=True,
                     num_speculative_tokens=3, max_num_seqs=2)
    result = _whatif(fp8, 2, 24, "0.24.0", kv_dtype="int8_per_token_head", kv_cache_memory=int(5.23 * (1 << 30)))
    assert {c.verdict for c in result.comparisons} == {"agree"}
    lines = "\n".join(result.whatif["engine"]["stages"][0]["log"])
    for p in int8.figures:
        assert p.shown in lines


def test_a_whatif_of_mtp_answers_the_boot_that_ran_it():
    # 99sono/DockerBuildFiles: RedHatAI/Qwen3.6-35B-A3B-NVFP4 on one GB10, vLLM 0.20.0, fp8 KV, 262,144 tokens, prefix
    # caching, 8 sequences; without MTP 66.93 GiB, block 2096, 1,754,352 tokens; with MTP 2 66.37 GiB, block 2128, 3
    # padding layers, 1,581,104 tokens: the boot without MTP given MTP 2 and that memory prints the MTP boot's lines
    mtp = read_log((LOGS / "vllm/qwen36-35b-a3b-nvfp4-gb10-fp8kv-262k-mtp2-0.20.0.log").read_text())
    plain = read_log((LOGS / "vllm/qwen36-35b-a3b-nvfp4-gb10-fp8kv-262k-0.20.0.log").read_text())
    result = _whatif(plain, 1, 120, "0.20.0", QWEN36_35B, draft=2, kv_cache_memory=int(66.37 * (1 << 30)))
    assert {c.verdict for c in result.comparisons} == {"agree"}
    lines = "\n".join(result.whatif["engine"]["stages"][0]["log"])
    assert len(mtp.figures) >= 6
    for p in mtp.figures:
        assert p.shown in lines


def test_a_whatif_of_async_scheduling_keeps_two_batches_beside_the_drafters_window():
    # zzpanic/qwen3.6-vllm-gfx1201-launchers: Qwen3.8-27B with a DFlash2 drafter (5 layers windowed at 2,048) on an R9700,
    # its args line's async_scheduling False: one batch of 2,560 tokens beside each window, cdiv(2,047 + 2,560, 1,664)
    # + 1 = 4 blocks of the window group where two batches take cdiv(2,047 + 5,120, 1,664) + 1 = 6 (kv_cache_interface.py
    # SlidingWindowSpec.max_admission_blocks_per_request), so 560 blocks a request against 562:
    # int(684 / 560 x 204,800) = 250,148 tokens as the boot logged (reproduced, SOURCES.yaml), and with
    # async scheduling on int(684 / 562 x 204,800) = 249,258
    from mcache.core.explain import explain as explain_log
    from mcache.core.load import load_spec, with_drafter
    from mcache.core.options import SizeOptions
    from mcache.core.sizing.layout import ParallelLayout

    name = "vllm/qwen38-27b-int4-r9700-rocm-fp8kv-205k-dflash2-backport-0.26.0.log"
    log = read_log((LOGS / name).read_text(), name)
    assert log.settings["async_scheduling"] is False
    spec = with_drafter(load_spec(QWEN35_27B), str(HERE / "data" / "hf_configs_drafters" / "qwen3.8-27b-dflash2.json"))
    for options, tokens in ((SizeOptions(), "250,148"), (SizeOptions(async_scheduling=True), "249,258")):
        result = explain_log(log, spec, QWEN35_27B, ParallelLayout(), None, "0.28.0", options)
        lines = "\n".join(result.whatif["engine"]["stages"][0]["log"] if result.whatif else
                          result.report["engine"]["stages"][0]["log"])
        assert f"GPU KV cache size: {tokens} tokens" in lines, lines


def test_the_same_memory_in_fp8_kv_prints_the_fp8_boot():
    # club-3090 #585 and #594: the dual-max compose (Qwen3.6-27B-FP8, TP 2, MTP 3, prefix caching, 2 sequences) measured
    # 5.33 GiB with int8_per_token_head KV (295,455 tokens) and 5.33 GiB with fp8 KV (300,220): the int8 boot with fp8
    # KV and its own memory prints the fp8 boot's lines (the int8 page carries 8 bytes of scales a KV head)
    fp8 = read_log((LOGS / "vllm/qwen36-27b-fp8-2x3090-dual-max-fp8kv.log").read_text())
    int8 = _completed("vllm/qwen36-27b-fp8-2x3090-dual-max-int8kv-0.22.log", kv_cache_dtype="int8_per_token_head",
                      enable_prefix_caching=True, num_speculative_tokens=3, max_num_seqs=2)
    result = _whatif(int8, 2, 24, "0.22.0", kv_dtype="fp8")
    assert {c.verdict for c in result.comparisons} == {"agree"}
    lines = "\n".join(result.whatif["engine"]["stages"][0]["log"])
    for p in fp8.figures:
        assert p.shown in lines


def test_a_whatif_of_a_longer_length_fails_as_the_boot_that_tried_it():
    # vllm#49064: 2x RX 7900 XT, vLLM 0.23.1, TP 2, utilization 0.85. The boot at --max-model-len 122633 measured 3.86
    # GiB and stopped at 161 Mamba blocks (the fixture); the same box at 132000 had stopped first on KV capacity with
    # "the estimated maximum model length is 123872" (the thread): the what-if of 132000 on the 122633 boot says so
    log = _completed("vllm/qwen38-27b-2x7900xt-rocm-0.23.1-mamba-blocks-error.log", max_model_len=122633,
                     gpu_memory_utilization=0.85, kv_cache_memory_bytes=int(3.86 * (1 << 30)),
                     gdn_prefill_backend="triton")
    result = _whatif(log, 2, 20, "0.23.1", max_seq_len=132000)
    assert {c.verdict for c in result.comparisons} == {"agree"}
    error = result.whatif["engine"]["stages"][0]["startup_error"]
    assert "the estimated maximum model length is 123872" in error


def test_a_boot_that_measured_no_kv_memory_fails_as_it_did(capsys):
    # 99sono/DockerBuildFiles: Qwen3.6-35B-A3B NVFP4 on an RTX 5090 at utilization 0.70, vLLM 0.20.0, measured
    # "Available KV cache memory: -3.31 GiB" and stopped with "No available memory for the cache blocks": the negative
    # budget is fed as measured (not clamped to zero), printed as the engine printed it, and stops the start-up
    name = "vllm/qwen36-35b-a3b-nvfp4-rtx5090-fp8kv-8k-util0.70-no-kv-memory-0.20.0.log"
    code, data = explain([str(LOGS / name), "--model", QWEN36_35B, "--engine-version", "0.20.0"], capsys)
    stage = data["engine"]["stages"][0]
    assert code == 0 and data["fed"]["kv_cache_memory_bytes"] == -int(3.31 * (1 << 30))
    assert "Available KV cache memory: -3.31 GiB" in stage["log"]
    assert stage["startup_error"].startswith("No available memory for the cache blocks.")
    assert stage["startup_error"].split(" See ")[0] in (LOGS / name).read_text()


def test_the_pool_a_log_fixes_prints_its_token_count_by_the_formula_of_its_release(capsys):
    # vllm#40691: Qwen3.5-27B, vLLM 0.19.0, 32,768 tokens, no memory in the excerpt. Its two figures admit one pool,
    # 1,487 blocks of 784 tokens (71.2 GiB): before 0.20.1 the token count is num_blocks // 4 groups x 784 = 290,864;
    # from 0.20.1 it is int(concurrency x length), 1,487 / 45 blocks a request x 32,768 (vllm#40694's "After")
    log = str(LOGS / "vllm/qwen35-27b-h20-0.19.0-kv-size-log.log")
    given = ["--model", QWEN35_27B, "--gpu", "h20", "--max-num-seqs", "16", "--kv-cache-memory", "71.2GiB"]
    code, data = explain([log, *given, "--engine-version", "0.19.0"], capsys)
    assert (code, verdicts(data)) == (0, {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}})
    code, data = explain([log, *given, "--engine-version", "0.20.1"], capsys)
    assert code == 1 and {c["figure"]: (c["mcache"], c["verdict"]) for c in data["comparisons"]} == {
        "kv_cache_tokens": ("1,082,800", "differ"), "max_concurrency": ("33.04x", "agree")}


def test_a_boot_without_the_drafts_its_thread_names_is_one_without_mtp(capsys):
    # club-3090#104: 9.84 GiB printed 619,202 tokens / 2.36x. The thread's later args (MTP 3) give 555,042 / 2.12x
    # from that memory (the SOURCES finding); without the drafts the same settings give the log's figures
    log = str(LOGS / "vllm/qwen36-27b-int4-autoround-2x3090-x8-util088.log")
    code, data = explain([log, "--model", QWEN35_27B, "--tp", "2", "--kv-cache-dtype", "fp8_e5m2", "--enable-prefix-caching",
                          "--max-num-seqs", "2", "--gpu-memory", "24576MiB", "--engine-version", "0.20.2rc1"], capsys)
    assert (code, verdicts(data)) == (0, {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}})


def test_a_whatif_of_a_longer_context_keeps_the_measured_memory(capsys):
    code = main(["explain", str(LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log"), "--model", QWEN36_35B,
                 "--gdn-prefill-backend", "triton", "--max-model-len", "262144", *V033])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"what-if \(--max-seq-len 262144; the measured memory kept\): vLLM 0\.33\.0 runs 1 sequences of "
                     r"262144 tokens", out)
    assert "Available KV cache memory: 6.01 GiB" in out.split("what-if")[1]


def test_a_whatif_that_does_not_start_names_the_largest_value_that_does(capsys):
    # 4096 running requests need 4096 Mamba blocks; the measured memory holds 300 (vLLM's own message says so)
    code, data = explain([str(LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log"), "--model", QWEN36_35B,
                          "--gdn-prefill-backend", "triton", "--max-num-seqs", "4096", *V033], capsys)
    stage = data["whatif"]["engine"]["stages"][0]
    assert "max_num_seqs (4096) exceeds available Mamba cache blocks (300)" in stage["startup_error"]
    assert data["whatif"]["largest"] == {"max_num_seqs": 300}
    assert main(["explain", str(LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log"), "--model", QWEN36_35B,
                 "--gdn-prefill-backend", "triton", "--max-model-len", "600000", *V033]) == 0
    assert "the largest --max-seq-len that starts with the same memory: 262144" in capsys.readouterr().out


# --- hand-made variants of each log format -------------------------------------------------------------------------

RUN2 = (LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log").read_text()
ARGS = [line for line in RUN2.splitlines() if "non-default args" in line][0]
KV_LINES = [line for line in RUN2.splitlines() if "non-default args" not in line]


def _message(line: str) -> str:
    return line.split("] ", 1)[1]


VLLM_VARIANTS = {
    "colour": "\n".join(f"\x1b[1;36m(EngineCore_DP0 pid=107)\x1b[0;0m \x1b[32mINFO\x1b[0m 07-09 02:58:11 "
                        f"[gpu_worker.py:508] {_message(line)}" for line in [*KV_LINES, ARGS]),
    "compose-and-timestamps": "\n".join(f"vllm-1  | 2026-07-09T02:58:11.123456Z {line}" for line in [ARGS, *KV_LINES]),
    "journald": "\n".join(f"Jul 09 02:58:11 gpu-box python3[107]: {line}" for line in [ARGS, *KV_LINES]),
    # a log viewer's timestamp column (Docker Desktop, Dozzle) and a Kubernetes node's container log (CRI)
    "viewer-timestamps": "\n".join(f"2026-07-09 02:58:11.045 | {line}" for line in [ARGS, *KV_LINES]),
    "kubernetes-cri": "\n".join(f"2026-07-09T02:58:11.045123456+02:00 stdout F {line}" for line in [ARGS, *KV_LINES]),
    "bare-messages": "\n".join(_message(line) for line in [ARGS, *KV_LINES]),
    # two data-parallel engines, their lines interleaved; a worker of the second measured more memory, and each
    # figure is compared once per process that printed it
    "interleaved-ranks": "\n".join([ARGS, *(f"(EngineCore_DP{i % 2} pid=10{i % 2}) INFO 07-09 02:58:11 [x.py:1] "
                                            f"{_message(KV_LINES[i // 2])}" for i in range(6))]),
    # a one-line KV summary (newer releases) and the author's wrapping
    "one-line-and-wrapped": "\n".join([ARGS, KV_LINES[0], "GPU KV cache size: 569,878 tokens, Maximum concurrency for",
                                       "    131,072 tokens per request: 4.35x"]),
}


# the API server's start-up logo (log_version_and_model, from the 0.15 releases), and the one line it prints in the
# logo's place where the logger has no formatter: the release and the model the boot ran
LOGO = ["", "       █     █     █▄   ▄█", " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.24.0",
        "  █▄█▀ █     █     █     █  model   ~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4", "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀"]
NO_LOGO = ["vLLM server version 0.24.0, serving model ~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4"]


@pytest.mark.parametrize(("banner", "line"), [(LOGO, 3), (NO_LOGO, 1)], ids=["logo", "no-logo"])
def test_the_start_up_banner_names_the_release_and_the_model(banner, line, tmp_path, capsys):
    path = tmp_path / "boot.log"
    path.write_text("\n".join([*(f"(APIServer pid=1) INFO 07-09 02:56:25 [api_utils.py:339] {b}" for b in banner),
                               *KV_LINES]))
    log = read_log(path.read_text())
    assert (log.version, log.model) == ("0.24.0", "~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4")
    assert "is not here" in one_line(["explain", str(path)], capsys)  # the author's path, not a Hub id
    # the settings of run2's args line, left out here: sized as the release the banner names, its figures come back
    code, data = explain([str(path), "--model", QWEN36_35B, "--kv-cache-dtype", "fp8", "--enable-prefix-caching",
                          "--max-num-seqs", "1"], capsys)
    assert (code, data["engine_version"], data["log"]["version_line"]) == (0, "0.24.0", line)


def test_the_logo_of_a_public_boot_names_its_release():
    # vllm#44022: a 0.22.0 boot whose excerpt ends before the cache is sized (SOURCES: not sized); its logo says 0.22.0
    log = read_log((LOGS / "vllm/nemotron3-nano-30b-nvfp4-rtx5090-wsl-0.22.0-banner.log").read_text())
    assert (log.version, log.version_line, log.model) == ("0.22.0", 4, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4")


@pytest.mark.parametrize("variant", sorted(VLLM_VARIANTS))
def test_a_vllm_log_reads_the_same_in_every_format(variant, tmp_path, capsys):
    path = tmp_path / "boot.log"
    path.write_text(VLLM_VARIANTS[variant])
    code, data = explain([str(path), "--model", QWEN36_35B, "--gdn-prefill-backend", "triton", *V033], capsys)
    assert code == 0
    assert verdicts(data) == {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}}
    assert list(data["fed"]) == ["kv_cache_memory_bytes"] and abs(data["fed"]["kv_cache_memory_bytes"] - 6.01 * 2**30) < 1
    assert data["log"]["settings"]["max_num_seqs"] == 1
    if variant != "bare-messages":  # the process prefix under the timestamps and prefixes is read as the process
        assert any(p.startswith("EngineCore") for p in data["log"]["processes"]), data["log"]["processes"]


def test_a_layout_that_contradicts_the_one_the_log_states_is_one_line(capsys):
    # the config line states TP 1 and PP 1: sizing it as TP 2 would call every figure a finding of nothing the engine did
    log = str(LOGS / "vllm/nemotron-cascade2-30b-nvfp4-rtx5090-wsl-0.19.2rc1-64k.log")
    model = str(HF_CONFIGS / "nvidia-nemotron-3-nano-30b-a3b.json")
    assert one_line(["explain", log, "--model", model, "--tp", "2"], capsys) == (
        "mcache: --tp 2: the log states a tensor-parallel size of 1 (line 18); --tp is for a log that does not state it "
        "(`mcache size` answers another layout)")
    assert "--pp 2: the log states a pipeline-parallel size of 1 (line 18)" in one_line(
        ["explain", log, "--model", model, "--pp", "2"], capsys)
    code, data = explain([log, "--model", model, "--tp", "1", "--pp", "1"], capsys)  # the same layout: no contradiction
    assert code == 0


def test_a_log_with_bytes_that_are_not_utf8_is_read_as_stdin_is(tmp_path, capsys):
    # a terminal capture may hold a stray Latin-1 byte: the log is read, the byte as U+FFFD, as from stdin
    path = tmp_path / "boot.log"
    path.write_bytes(b"progress 50% \xe9\xff\n" + VLLM_VARIANTS["journald"].encode())
    code, data = explain([str(path), "--model", QWEN36_35B, "--gdn-prefill-backend", "triton", *V033], capsys)
    assert code == 0 and verdicts(data) == {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}}


# Two lines of a vLLM 0.27.2rc1 boot on an Intel Arc Pro B70 (https://github.com/SergiioB/intel-arc-pro-b70-inference-
# cookbook/issues/4; the engine line cut where the excerpt wraps it): --kv-cache-memory-bytes and MTP given, no args line
KV_GIVEN_BOOT = [
    "(EngineCore pid=316) INFO 08-21 18:34:34 [core.py:122] Initializing a V1 LLM engine (v0.27.2rc1.dev77+gac7509e2b) with "
    "config: model='/model', speculative_config=SpeculativeConfig(method='mtp', model='/model', num_spec_tokens=4), "
    "tokenizer='/model', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, "
    "trust_remote_code=False, dtype=torch.float16, max_seq_len=100000, download_dir=None, load_format=auto, "
    "tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, "
    "dcp_comm_backend=ag_rs, disable_custom_all_reduce=True, quantization=auto_gptq, quantization_config=None, "
    "enforce_eager=False, enable_return_routed_experts=False, kv_cache_dtype=fp8, device_config=xpu",
    "(EngineCore pid=316) INFO 08-21 18:37:44 [gpu_worker.py:492] Initial free memory 31.16 GiB, reserved 4.25 GiB memory "
    "for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the "
    "gpu_memory_utilization config.",
    "(EngineCore pid=316) WARNING 08-21 18:37:44 [kv_cache_utils.py:1227] Add 3 padding layers, may waste at most 6.25% KV "
    "cache memory",
]


def test_a_vllm_boot_with_its_kv_memory_given_and_drafts_on_the_engine_line(tmp_path, capsys):
    """The budget --kv-cache-memory-bytes reserved (gpu_worker.py) is the KV memory fed, and the engine line's
    SpeculativeConfig repr gives the drafts where no args line does; an args line's speculative_config still wins."""
    log = read_log("\n".join(KV_GIVEN_BOOT))
    assert [(m.name, m.setting, m.shown) for m in log.measured] == [
        ("available_kv_cache_memory", "kv_cache_memory_bytes", "4.25 GiB")]
    assert log.settings["num_speculative_tokens"] == 4 and log.other_settings["speculative_config"]["method"] == "mtp"
    args = "(APIServer pid=1) INFO [utils.py:233] non-default args: {'speculative_config': {'method': 'mtp', " \
           "'num_speculative_tokens': 2}}"
    assert read_log("\n".join([args, *KV_GIVEN_BOOT])).settings["num_speculative_tokens"] == 2
    # on the XPU GatedDeltaNet takes attention blocks in multiples of 64 (platforms/xpu.py update_block_size_for_backend)
    path = tmp_path / "xpu.log"
    path.write_text("\n".join(KV_GIVEN_BOOT))
    code, data = explain([str(path), "--model", str(HF_CONFIGS / "qwen3.5-27b.json"), "--gpu-memory", "32GiB",
                          "--kernel-block-size", "64"], capsys)
    assert code == 0 and verdicts(data) == {"padding_layers": {"agree"}, "padding_waste_pct": {"agree"}}
    assert list(data["fed"]) == ["kv_cache_memory_bytes"] and data["fed"]["kv_cache_memory_bytes"] == 4.25 * 2**30


def test_the_attention_backends_block_is_a_setting_of_the_run():
    """`Setting kv cache block size to N for B backend.` (platforms/interface.py update_block_size_for_backend, printed
    only where no --block-size was given) is the block the run's backend chose: a setting fed to the profile, not a
    figure compared; an args line's block_size wins. The public ROCm boot it sets to 64 is reproduced (SOURCES.yaml)."""
    line = "(EngineCore pid=312) INFO 08-09 00:43:58 [interface.py:635] Setting kv cache block size to 64 for " \
           "ROCM_AITER_UNIFIED_ATTN backend."
    log = read_log("\n".join([*KV_GIVEN_BOOT, line]))
    assert log.settings["block_size"] == 64 and "block_size" not in {p.key for p in log.figures}
    args = "(APIServer pid=1) INFO [utils.py:233] non-default args: {'block_size': 32}"
    assert read_log("\n".join([args, *KV_GIVEN_BOOT, line])).settings["block_size"] == 32


def test_an_args_line_with_enum_reprs_is_read():
    """vLLM's args line prints a compilation config's enums as `<Name.MEMBER: value>` (not Python syntax, about 0.30 on):
    each is kept as a string of its text, so the rest of the line is still read; nothing is evaluated."""
    from mcache.core.logs.literals import literal_dict

    text = "{'max_num_seqs': 16, 'compilation_config': {'mode': <CompilationMode.VLLM_COMPILE: 3>, 'dynamic_shapes_config': " \
           "{'type': <DynamicShapesType.BACKED: 'backed'>}}, 'name': '<not: an enum>', 'x': null}"
    assert literal_dict(text) == {"max_num_seqs": 16, "x": None, "name": "<not: an enum>", "compilation_config": {
        "mode": "<CompilationMode.VLLM_COMPILE: 3>", "dynamic_shapes_config": {"type": "<DynamicShapesType.BACKED: 'backed'>"}}}
    args = f"(APIServer pid=1) INFO [api_utils.py:286] non-default args: {text}"
    assert read_log("\n".join([args, *KV_GIVEN_BOOT])).settings["max_num_seqs"] == 16


def test_a_vllm_log_cut_before_the_cache_is_sized_is_one_line(tmp_path, capsys):
    path = tmp_path / "cut.log"
    path.write_text("\n".join([ARGS, KV_LINES[0]]))
    assert "ends before the cache is sized" in one_line(["explain", str(path), "--model", QWEN36_35B], capsys)
    # an excerpt of the lines after the sizing (a worker's memory summary after the CUDA graphs) left the sizing out
    path.write_text("\n".join([ARGS, "(Worker_TP0 pid=150) INFO 09-02 13:12:19 [gpu_worker.py:789] Free memory on device "
                               "(23.15/23.56 GiB) on startup. Desired GPU memory utilization is (0.92, 21.67 GiB)."]))
    assert "leaves out the cache sizing" in one_line(["explain", str(path), "--model", QWEN36_35B], capsys)


def test_a_log_read_from_stdin(capsys):
    done = subprocess.run([sys.executable, "-m", "mcache.cli.main", "explain", "-", "--model", QWEN36_35B,
                           "--gdn-prefill-backend", "triton", *V033, "--format", "json"], input=RUN2,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["findings"] == 0


def test_an_sglang_log_with_prefixes_colour_and_ranks(tmp_path, capsys):
    mamba = ("Mamba Cache is allocated. max_mamba_cache_size: 8, conv_state size: 0.02GB, ssm_state size: 0.63GB ")
    text = "\n".join(f"\x1b[33m[2026-09-04 10:00:0{i} DP{rank} TP0]\x1b[0m {mamba}" for i, rank in enumerate((1, 0)))
    (tmp_path / "s.log").write_text(text)
    code, data = explain([str(tmp_path / "s.log"), "--model", QWEN35_27B, "--gpu", "rtx-5090", "--weights", "16GiB",
                          "--max-mamba-cache-size", "8", "--mamba-radix-cache-strategy", "extra_buffer_lazy",
                          "--max-running-requests", "1", "--mamba-ssm-dtype", "bfloat16"], capsys)
    assert code == 0 and data["log"]["tp"] == 1 and data["log"]["processes"] == ["DP0 TP0", "DP1 TP0"]
    assert verdicts(data) == {k: {"agree"} for k in ("max_mamba_cache_size", "conv_state_gb", "ssm_state_gb")}


# No public vLLM boot with --data-parallel-size > 1 that prints its memory lines was found (GitHub issues and pages
# searched for EngineCore_DP1 / data_parallel_size with "Available KV cache memory" or "GPU KV cache size"): the two
# real boots of one compose (club-3090 #612 and #652: one RTX 5090, 5.98 and 6.01 GiB) stand in for the two engine
# cores of one deployment, prefixed as vLLM prefixes them, with data_parallel_size 2 in the args line
RUN1 = (LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log").read_text().splitlines()
DP_ARGS = ARGS.replace("{'model_tag'", "{'data_parallel_size': 2, 'model_tag'")


def _engine_cores(*cores: list[str]) -> str:
    return "\n".join([DP_ARGS, *(line.replace("(EngineCore pid=107)", f"(EngineCore_DP{i} pid=10{i})")
                                 for i, lines in enumerate(cores) for line in lines if "non-default args" not in line)])


# vllm#50722 (comment of 2026-08-14), verbatim: vLLM 0.26's memory summary of one rank (gpu_worker.py:857, at INFO from
# 0.26) and another rank's CUDA-graph line, pasted as an indented Markdown code block
SUMMARY = ("    (Worker_TP1 pid=12025) INFO 08-14 09:28:01 [gpu_worker.py:857] Free memory on device (77.78/79.33 GiB) on "
           "startup. Desired GPU memory utilization is (0.85, 67.43 GiB). Actual usage is 16.92 GiB for weight, 5.66 GiB "
           "for peak activation, 0.13 GiB for non-torch memory, and 1.34 GiB for CUDAGraph memory. Replace "
           "gpu_memory_utilization config with `--kv-cache-memory=46421742490` (43.23 GiB) to fit into requested memory, "
           "or `--kv-cache-memory=57542425088` (53.59 GiB) to fully utilize gpu memory. Current kv cache memory in use "
           "is 43.4 GiB.\n"
           "    (Worker_TP2 pid=12026) INFO 08-14 09:28:01 [gpu_worker.py:793] CUDA graph pool memory: 1.34 GiB (actual), "
           "1.32 GiB (estimated), difference: 0.02 GiB (1.5%).")


def test_a_vllm_memory_summary_pasted_as_a_code_block_gives_the_device_and_the_budget():
    log = read_log(SUMMARY)
    assert log.processes == ["Worker_TP1", "Worker_TP2"]  # the block's indent is not a continuation of one record
    assert (log.gpu_bytes, log.settings) == (round(79.33 * 2**30), {"gpu_memory_utilization": 0.85})
    assert [(m.name, m.shown, m.process) for m in log.measured] == [("available_kv_cache_memory", "43.4 GiB", "Worker_TP1")]


def test_the_memory_summary_stands_for_the_gpu_and_the_budget_a_log_does_not_state(tmp_path, capsys):
    # run1's boot with its 'Available KV cache memory' line given instead by the summary vLLM 0.26 logs after it, in that
    # release's words, with the RTX 5090's total (31.84 GiB) and run1's budget (the reader takes only the total, the
    # utilization and the budget; the other figures are placeholders): the same figures, and no --gpu needed
    summary = ("(EngineCore pid=107) INFO 07-06 22:52:12 [gpu_worker.py:857] Free memory on device (31.31/31.84 GiB) on "
               "startup. Desired GPU memory utilization is (0.9, 28.66 GiB). Actual usage is 20.37 GiB for weight, 1.77 "
               "GiB for peak activation, 0.12 GiB for non-torch memory, and 0.38 GiB for CUDAGraph memory. Current kv "
               "cache memory in use is 5.98 GiB.")
    path = tmp_path / "run1.log"
    path.write_text("\n".join([*(line for line in RUN1 if "Available KV cache memory" not in line), summary]))
    code, data = explain([str(path), "--model", QWEN36_35B, "--engine-version", "0.24.0"], capsys)
    assert code == 0 and verdicts(data) == {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}}
    path.write_text("\n".join([*RUN1, summary]))  # both: one budget, the line that states it
    assert [m.line for m in read_log(path.read_text()).measured if m.name == "available_kv_cache_memory"] == [1]


def test_vllm_data_parallel_engine_cores_are_sized_one_core_each_from_its_own_memory(tmp_path, capsys):
    path = tmp_path / "dp2.log"
    path.write_text(_engine_cores(KV_LINES, RUN1))
    code, data = explain([str(path), "--model", QWEN36_35B, "--gdn-prefill-backend", "triton", *V033], capsys)
    # one engine core of TP 1 each, as mcache's --tp 2 --attention-dp sizes a rank: each core's figures come back
    # from its own measured memory (6.01 GiB: 569,878 tokens; 5.98 GiB: 567,978), none from the smaller of the two
    assert code == 0 and (data["log"]["dp"], data["log"]["tp"]) == (2, None)
    assert {(c["process"], c["mcache"]) for c in data["comparisons"] if c["figure"] == "kv_cache_tokens"} == {
        ("EngineCore_DP0", "569,878"), ("EngineCore_DP1", "567,978")}
    assert verdicts(data) == {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}}
    assert data["engine"]["attention_dp_ranks"] == 2
    assert any("data_parallel_size=2 (line 1): 2 engine cores of TP 1" in n and "--tp 2 --attention-dp" in n
               for n in data["notes"])


def test_an_sglang_log_with_attention_dp_narrower_than_tp_is_reproduced(tmp_path, capsys):
    # SGLang 0.5.23's own lines for --tp-size 4 --dp-size 2 --enable-dp-attention on an H200 with 30 GiB of weights
    # (the oracle's case in tests/data/engine_golden/sglang-0.5.23.json.gz), as attention-DP rank 0 logs them
    lines = ["max_running_requests is capped to 239 by the mamba state cache (max_mamba_cache_size=1197, 5 state slots "
             "per request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the "
             "state size with --mamba-ssm-dtype bfloat16.",
             "Mamba Cache is allocated. max_mamba_cache_size: 1197, conv_state size: 0.99GB, ssm_state size: 42.12GB ",
             "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 4186472, K size: 23.96 GB, V size: 23.96 GB",
             "max_total_num_tokens=4186472, chunked_prefill_size=4096, max_prefill_tokens=16384, "
             "max_running_requests=239, context_len=262144"]
    path = tmp_path / "dp2.log"
    path.write_text("\n".join(["[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=4, pp_size=1, "
                               "dp_size=2, enable_dp_attention=True)",
                               *(f"[2026-01-01 00:00:05 DP0 TP0] {line}" for line in lines)]))
    code, data = explain([str(path), "--model", str(HF_CONFIGS / "qwen3-next-80b-a3b.json"), "--gpu", "h200",
                          "--weights", "30GiB", "--engine-version", "0.5.23"], capsys)
    assert code == 0 and {c["verdict"] for c in data["comparisons"]} == {"agree"} and len(data["comparisons"]) == 12
    assert data["engine"]["attention_dp_ranks"] == 2
    assert any("2 attention-DP groups of 2 ranks" in n and "--tp 4 --attn-dp-size 2" in n for n in data["notes"])


def test_data_parallel_layouts_are_read_as_one_engine_instance():
    from mcache.core.explain import _data_parallel_notes, log_layout
    from mcache.core.sizing.layout import ParallelLayout

    vllm = read_log("\n".join([*(f"(Worker_DP{d}_TP{t} pid=2) INFO 01-01 00:00:00 [x.py:1] Available KV cache memory: "
                                  "1.00 GiB" for d in (0, 1) for t in (0, 1)),
                                *(f"(EngineCore_DP{d} pid=1) INFO 01-01 00:00:00 [x.py:1] GPU KV cache size: 1,000 tokens"
                                  for d in (0, 1))]))
    assert (vllm.dp, vllm.tp, log_layout(vllm, None, None, False)) == (2, 2, (2, 1, False, None))
    assert "2 engine cores of TP 2, each sizing its own cache: sized as one" in _data_parallel_notes(
        vllm, ParallelLayout(tp=2))[0]
    args = "[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=4, dp_size={}, enable_dp_attention={})"
    kv = "[2026-01-01 00:00:01 DP0 TP0] KV Cache is allocated. #tokens: 10, K size: 0.01 GB, V size: 0.01 GB"
    # SGLang's --dp-size N with --enable-dp-attention is --attn-dp-size N (tp's width: None, --attention-dp's)
    for dp, on, layout in ((4, True, (4, 1, True, None)), (2, True, (4, 1, True, 2)), (2, False, (4, 1, False, None))):
        log = read_log(args.format(dp, on) + "\n" + kv)
        assert (log.dp, log.dp_line, log.attention_dp, log_layout(log, None, None, False)) == (dp, 1, on, layout)
    assert log_layout(log, 2, None, True) == (2, 1, True, None)  # the options given win
    assert log_layout(log, 8, None, False, 4) == (8, 1, True, 4)
    narrow = read_log(args.format(2, True) + "\n" + kv)
    note = _data_parallel_notes(narrow, ParallelLayout(tp=4, attention_dp=True, attention_dp_size=2))[0]
    assert "2 attention-DP groups of 2 ranks (an attention TP of 2)" in note and "--tp 4 --attn-dp-size 2" in note
    assert "the log's dp_size=2 (line 1)" in note
    # 0.5.22 on logs the width as attn_dp_size (dp_size 1): the note names the setting the log states
    moved = read_log("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=4, dp_size=1, "
                     "attn_dp_size=2, enable_dp_attention=False)\n" + kv)
    note = _data_parallel_notes(moved, ParallelLayout(tp=4, attention_dp=True, attention_dp_size=2))[0]
    assert "the log's attn_dp_size=2 (line 1)" in note and "--tp 4 --attn-dp-size 2" in note


def test_an_sglang_mla_pool_line_is_read_in_both_spellings():
    # MLATokenToKVPool logs one latent pool, "KV size" (memory_pool.py, the 0.5 line; sglang#17830 for Kimi-Linear),
    # later builds' unified allocation log with the dtype in front; a rank's second pool line is its draft's
    old = read_log("[2026-01-27 13:00:30 TP0] KV Cache is allocated. #tokens: 2167843, KV size: 16.28 GB")
    assert [(p.key, p.value) for p in old.figures] == [("kv_tokens", 2167843), ("kv_size_gb", 16.28)]
    new = read_log("\n".join(f"[2026-09-01 00:00:0{i} TP0] KV Cache is allocated. dtype: torch.{dtype}, #tokens: 70950, "
                             f"KV size: {size} GB" for i, (dtype, size) in enumerate((("float8_e4m3fn", "0.53"),
                                                                                     ("bfloat16", "0.09")))))
    assert [(p.key, p.value) for p in new.figures] == [
        ("kv_tokens", 70950), ("kv_size_gb", 0.53), ("kv_dtype", "float8_e4m3fn"),
        ("draft_kv_tokens", 70950), ("draft_kv_size_gb", 0.09), ("draft_kv_dtype", "bfloat16")]
    assert new.settings["kv_cache_dtype"] == "fp8_e4m3"


def test_an_sglang_server_args_dict_is_read_as_its_repr():
    # later SGLang builds print server_args as a dict (club-3090 #1261, lmsysorg/sglang:v0.5.19:
    # "[2026-09-12 00:22:13] server_args={'model_path': '/models/qwen3.8-27b-nvfp4', 'tokenizer_path': …"; the excerpt
    # cuts the line, so its shape stands in here with the settings the same compose gives)
    args = ("[2026-09-12 00:22:13] server_args={'model_path': '/models/qwen3.8-27b-nvfp4', 'tp_size': 2, 'pp_size': 1, "
            "'dp_size': 1, 'quantization': 'modelopt_fp4', 'context_length': 262144, 'max_running_requests': 8, "
            "'mamba_radix_cache_strategy': 'extra_buffer', 'enable_dp_attention': False, 'speculative_algorithm': 'DFLASH'}")
    kv = "[2026-09-12 00:22:40 TP0] KV Cache is allocated. #tokens: 10, K size: 0.01 GB, V size: 0.01 GB"
    log = read_log(args + "\n" + kv)
    assert (log.model, log.tp, log.dp, log.attention_dp, log.quantization, log.weight_format) == (
        "/models/qwen3.8-27b-nvfp4", 2, 1, False, "modelopt_fp4", "nvfp4")
    assert log.settings == {"context_length": 262144, "max_running_requests": 8,
                            "mamba_radix_cache_strategy": "extra_buffer"}
    assert log.other_settings["speculative_algorithm"] == "DFLASH"
    cut = read_log(args[:-40] + "\n" + kv)  # a cut line is not read
    assert cut.model is None and cut.settings == {}


def _mcache_lines(engine: str, *args: str) -> list[str]:
    """The lines mcache's own profile says the engine logs (the reader's round trip)."""
    from mcache.core.deployment import Deployment
    from mcache.core.load import load_spec
    from mcache.core.options import SizeOptions
    from mcache.core.report import size_report
    from mcache.core.sizing.gpus import lookup
    from mcache.core.sizing.layout import ParallelLayout

    trtllm = {"max_batch": 64, "kv_cache_manager": "v1"} if engine == "trtllm" else {}  # V1 logs its allocation
    d = Deployment(ParallelLayout(), lookup("h200"), engine, SizeOptions(**trtllm))
    return size_report(load_spec("nemotron-h-8b"), d, "nemotron-h-8b").data["engine"]["stages"][0]["log"]


def test_a_tensorrt_llm_log_feeds_its_profiled_peak_and_reproduces_its_pool(tmp_path, capsys):
    # TensorRT-LLM's peak line holds the weights: mcache takes the rest as the non-KV memory, and the GPU from the line
    lines = _mcache_lines("trtllm")
    text = "\n".join(f"[10/31/2025-12:00:0{i}] [TRT-LLM] [I] {line}" for i, line in enumerate(lines))
    (tmp_path / "t.log").write_text("[TensorRT-LLM] TensorRT-LLM version: 1.2.0rc1\n" + text)
    code, data = explain([str(tmp_path / "t.log"), "--model", "nemotron-h-8b", "--max-batch-size", "64",
                          "--engine-version", "main", "--kv-cache-manager", "v1"], capsys)
    assert data["log"]["version"] == "1.2.0rc1" and "non_kv_memory_bytes" in data["fed"]
    assert code == 0, data["comparisons"]
    assert {c["verdict"] for c in data["comparisons"]} <= {"agree", "agree within the measured inputs' rounding"}
    assert {c["figure"] for c in data["comparisons"]} == {"kv_cache_budget_gib", "estimated_kv_cache_gib",
                                                          "allocated_kv_cache_gib", "max_tokens"}


def test_the_line_cleaner_keeps_each_process_and_its_ranks():
    lines = clean_lines("(Worker_PP1_TP3 pid=7) INFO 01-02 03:04:05 [x.py:1] a\n[2026-01-01 00:00:00 PP1 TP2] b\n"
                        "[TensorRT-LLM][RANK 5][INFO] c\n  d continued")
    assert [(x.text, x.ranks) for x in lines] == [("a", {"PP": 1, "TP": 3}), ("b", {"PP": 1, "TP": 2}),
                                                    ("c d continued", {"TP": 5})]


# --- bad input -----------------------------------------------------------------------------------------------------

def test_bad_input_is_one_line_each(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello\nworld\n")
    assert "not a start-up log" in one_line(["explain", str(tmp_path / "notes.txt")], capsys)
    assert "missing.log: file: a readable log" in one_line(["explain", str(tmp_path / "missing.log")], capsys)
    old = tmp_path / "old.log"
    old.write_text("(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.1.5\n" + RUN2)
    line = one_line(["explain", str(old), "--model", QWEN36_35B], capsys)
    assert line.startswith("mcache: --engine-version: ") and "the log says 0.1.5" in line
    source = tmp_path / "source.log"
    source.write_text("INFO 08-30 [api_server.py:1] vLLM API server version 0.1.dev20073+g8e685d198\n" + RUN2)
    assert "names no release" in one_line(["explain", str(source), "--model", QWEN36_35B], capsys)


TRT_PEAK = ("Peak memory during memory usage profiling (torch + non-torch): 113.65 GiB, available KV cache memory when "
            "calculating max tokens: 5.95 GiB, fraction is set 0.8999999761581421, kv size is 73728. device total memory "
            "119.70 GiB, , tmp kv_mem 0.56 GiB")
TRT_ALLOC = "[TensorRT-LLM][INFO] [MemUsageChange] Allocated {} GiB for max tokens in paged KV cache ({})."


@pytest.mark.parametrize("tail", [", , tmp kv_mem 0.56 GiB", ", temporary kv cache memory during profiling 0.56 GiB"])
def test_the_profiling_runs_temporary_pool_is_taken_off_the_tensorrt_llm_peak(tail):
    # _util.py KvCacheCreator._cal_max_memory: available = (total - peak + allocated_bytes) x fraction, the peak holding
    # the estimation run's pool: the non-KV peak is 113.65 - 0.56 GiB, good to the two printed roundings
    log = read_log("[TensorRT-LLM] TensorRT-LLM version: 1.1.0rc3\n" + TRT_PEAK.replace(", , tmp kv_mem 0.56 GiB", tail))
    (peak,) = [m for m in log.measured if m.name == "peak_memory"]
    assert peak.bytes == round(113.65 * 2**30) - round(0.56 * 2**30)
    assert peak.half_step == 2 * round(2**30 * 0.005)
    assert log.gpu_bytes == round(119.70 * 2**30)


def test_an_allocation_before_the_tensorrt_llm_peak_line_is_the_estimation_runs():
    # try_prepare_estimation sizes a temporary pool from the dummy requests before the memory is profiled; the one
    # after the peak line is the pool the engine runs with. A log without a peak line has only the latter.
    before, after = TRT_ALLOC.format("0.56", 8224), TRT_ALLOC.format("5.95", 86720)
    log = read_log("\n".join([before, TRT_PEAK, after]))
    assert [(p.key, p.value) for p in log.figures if "max_tokens" in p.key] == [("estimation_max_tokens", 8224),
                                                                                ("max_tokens", 86720)]
    assert [p.key for p in read_log(after).figures] == ["allocated_kv_cache_gib", "max_tokens"]


def test_the_executor_summary_line_gives_max_batch_size_not_the_cut_max_seq_len():
    # the executor prints its summary after each KV cache, with max_seq_len as the cache cut it ("Adjusted max_seq_len")
    log = read_log("[TRT-LLM] [I] max_seq_len=86720, max_num_requests=64, max_num_tokens=8192, max_batch_size=64\n"
                   + TRT_ALLOC.format("5.95", 86720))
    assert log.settings == {"max_batch_size": 64}


# --- the weight format: the log's quantization method, --weight-format, --weights ----------------------------------

AUTOROUND = "vllm/qwen36-27b-int4-autoround-2x3090-mtp-p2p-on.log"  # its args line (line 3): 'quantization': 'auto_round'
AUTOROUND_ARGS = ["--model", QWEN35_27B, "--gpu-memory", "24576MiB", "--gdn-prefill-backend", "triton",
                  "--engine-version", "0.22.0"]


@pytest.mark.parametrize(("text", "method", "fmt"), [
    # vLLM's args line, and its config line, which an args line stating the method outright overrides
    ("non-default args: {'model': 'm', 'quantization': 'fp8'}", "fp8", "fp8"),
    ("non-default args: {'model': 'm', 'quantization': 'modelopt_fp4'}", "modelopt_fp4", "nvfp4"),
    ("non-default args: {'model': 'm', 'quantization': 'modelopt'}", "modelopt", None),  # FP8 or NVFP4: its checkpoint's
    ("non-default args: {'model': 'm', 'quantization': 'awq'}", "awq", None),  # the method, not the bits
    ("Initializing a V1 LLM engine (v0.24.0) with config: model='m', quantization=fp8, enforce_eager=False", "fp8", "fp8"),
    ("Initializing a V1 LLM engine (v0.24.0) with config: model='m', quantization=None, enforce_eager=False", None, None),
    ("Initializing a V1 LLM engine (v0.24.0) with config: model='m', quantization=fp8, enforce_eager=False\n"
     "INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': 'm', 'quantization': 'mxfp4'}", "mxfp4", "mxfp4"),
    # SGLang's server_args
    ("server_args=ServerArgs(model_path='m', quantization='w8a8_int8', tp_size=1)", "w8a8_int8", "int8"),
    ("server_args=ServerArgs(model_path='m', quantization='modelopt_fp4', tp_size=1)", "modelopt_fp4", "nvfp4"),
    ("server_args=ServerArgs(model_path='m', quantization='modelopt', tp_size=1)", "modelopt", None),
    ("server_args=ServerArgs(model_path='m', quantization=None, tp_size=1)", None, None),
])
def test_the_log_states_its_quantization_method_and_the_format_it_names(text, method, fmt):
    log = read_log(text)
    assert (log.quantization, log.weight_format) == (method, fmt)
    assert log.quantization_line == (None if method is None else text.count("\n") + 1)  # the last line states it
    assert "quantization" not in log.other_settings  # read, so not listed among what mcache's profile leaves alone


def _engine_figures(data: dict) -> list:
    return [(c["figure"], c["mcache"]) for c in data["comparisons"]]


def test_explain_weighs_the_weights_as_the_logs_quantization_names_them(tmp_path, capsys):
    """A log whose args line says quantization fp8 sizes exactly as the same log with --weight-format fp8; one whose
    method names no format (auto_round) is weighed as the config's dtype, and says so."""
    fp8 = tmp_path / "fp8.log"
    fp8.write_text((LOGS / AUTOROUND).read_text().replace("'quantization': 'auto_round'", "'quantization': 'fp8'"))
    code, by_log = explain([str(fp8), *AUTOROUND_ARGS], capsys)
    assert by_log["weight_format"] == "fp8"
    assert by_log["weights_from"] == "weights weighed as fp8: the log's quantization=fp8 (line 3)"
    assert by_log["given"] == {"gdn_prefill_backend": "triton"}  # the log's format is no option given
    _, by_option = explain([str(LOGS / AUTOROUND), *AUTOROUND_ARGS, "--weight-format", "fp8"], capsys)
    assert by_option["weights_from"] == "weights weighed as fp8: given with --weight-format"
    assert _engine_figures(by_log) == _engine_figures(by_option)
    assert by_log["engine"]["settings"]["weights_bytes"] == by_option["engine"]["settings"]["weights_bytes"]
    _, plain = explain([str(LOGS / AUTOROUND), *AUTOROUND_ARGS], capsys)
    assert plain["weight_format"] is None
    assert plain["weights_from"] == ("the log's quantization=auto_round (line 3) names the method, not the format its "
                                     "weights are stored in: weighed as the config's bfloat16; give --weight-format to "
                                     "weigh them as stored")
    _, bf16 = explain([str(LOGS / AUTOROUND), *AUTOROUND_ARGS, "--weight-format", "bf16"], capsys)
    weights = [d["engine"]["settings"]["weights_bytes"] for d in (by_log, plain, bf16)]
    assert weights[0] < weights[1] == weights[2]


def test_a_weight_format_or_weights_given_win_over_the_logs_quantization(tmp_path, capsys):
    fp8 = tmp_path / "fp8.log"
    fp8.write_text((LOGS / AUTOROUND).read_text().replace("'quantization': 'auto_round'", "'quantization': 'fp8'"))
    _, given = explain([str(fp8), *AUTOROUND_ARGS, "--weight-format", "int4"], capsys)
    assert (given["weight_format"], given["given"]["weight_format"]) == ("int4", "int4")
    _, weights = explain([str(fp8), *AUTOROUND_ARGS, "--weights", "9GiB"], capsys)
    assert weights["weight_format"] is None and weights["engine"]["settings"]["weights_bytes"] == 9 << 30
    assert weights["weights_from"] == ("the log's quantization=fp8 (line 3) is not weighed: --weights gives the weights "
                                       "one rank loads")


def test_a_config_that_declares_its_quantization_is_weighed_as_it_says():
    from mcache.core.explain import weighed_by_log
    from mcache.core.load import load_spec
    from mcache.core.options import SizeOptions
    from mcache.core.sizing.weights import weighed_as

    log = read_log("non-default args: {'model': 'm', 'quantization': 'fp8'}")
    nvfp4 = weighed_as(load_spec(QWEN35_27B), "nvfp4")
    assert weighed_by_log(log, nvfp4, SizeOptions()) == (
        None, "weights weighed as the model's config declares (nvfp4); the log's quantization=fp8 (line 1) is not used")


def test_a_bad_weight_format_is_one_line(capsys):
    line = one_line(["explain", str(LOGS / AUTOROUND), *AUTOROUND_ARGS, "--weight-format", "fp4"], capsys)
    assert line == ("mcache: --weight-format: one of bf16, bfloat16, fp16, float16, nvfp4, mxfp4, fp8, fp8_block, int4, "
                    "int8, nf4, got 'fp4'")


def test_a_log_whose_figures_all_need_memory_mcache_lacks_confirms_nothing(tmp_path, capsys):
    """A pasted pair of KV lines (vllm-project/vllm#50722: no args line, no measured memory) and no --gpu: no figure is
    reproduced, and the summary says that rather than that every figure agrees (exit 0: nothing differs either)."""
    path = tmp_path / "kv-only.log"
    path.write_text("(EngineCore pid=5048) INFO 08-12 08:00:18 [kv_cache_utils.py:2177] GPU KV cache size: 4,222,737 tokens\n"
                    "(EngineCore pid=5048) INFO 08-12 08:00:18 [kv_cache_utils.py:2178] Maximum concurrency for 262,144 "
                    "tokens per request: 16.11x\n")
    assert main(["explain", str(path), "--model", QWEN36_35B]) == 0
    assert ("2 figures compared (2 not modelled); no finding, and none confirmed: mcache reproduced none of the log's "
            "figures (the notes say what it lacks)") in capsys.readouterr().out


@pytest.mark.parametrize(("edit", "words"), [
    (("'max_num_seqs': 1", "'max_num_seqs': 'two'"),
     "the log's max_num_seqs (line 4): a whole number of at least 1 up to 2**40, got 'two'"),
    (("'max_num_seqs': 1", "'max_num_seqs': -2"), "the log's max_num_seqs (line 4): a whole number of at least 1 up to 2**40, got '-2'"),
    (("'max_model_len': 131072", "'max_model_len': 1.5"), "the log's max_model_len (line 4): a whole number"),
    (("'max_num_seqs': 1", "'max_num_seqs': 1, 'gpu_memory_utilization': nan"),
     "the log's gpu_memory_utilization (line 4): a fraction in (0, 1], got 'nan'"),
    (("'max_num_seqs': 1", "'max_num_seqs': 1, 'gpu_memory_utilization': 5"),
     "the log's gpu_memory_utilization (line 4): a fraction in (0, 1], got '5'"),
    (("GPU KV cache size: ", "GPU KV cache size: " + "9" * 5000), "a number of more digits than any engine prints"),
    (("(EngineCore", "(EngineCore_DP99999999999999999999"), "a DP size of 100000000000000000000"),
    (("'max_num_seqs': 1", "'max_num_seqs': 1, 'tensor_parallel_size': 0"), "a TP size of 0 (line 4): an engine runs 1 to"),
    (("'max_model_len': 131072", "'max_model_len': 99999999999999999999999"), "a whole number of at least 1 up to 2**40"),
    # memory past a float's range (it overflowed rounding to bytes), or past any GPU's
    (("Available KV cache memory: 6.01", "Available KV cache memory: " + "9" * 400), "a memory figure of more digits"),
    (("Available KV cache memory: 6.01", "Available KV cache memory: 5000000"),
     "available_kv_cache_memory of 5000000 GiB: more memory than any GPU holds"),
])
def test_a_log_value_no_engine_takes_is_one_line_naming_it(edit, words, tmp_path, capsys):
    """A log's settings feed mcache's profile as its options would: a value no engine takes (the wrong type, a count
    below 1, a number too long or a layout too wide) stops with one line, never a traceback or silent nonsense."""
    old, new = edit
    assert old in RUN2
    path = tmp_path / "bad.log"
    path.write_text(RUN2.replace(old, new))
    err = one_line(["explain", str(path), "--model", QWEN36_35B, *V033], capsys, code=2)
    assert words in err


def test_a_measured_figure_past_the_gpu_is_named_by_its_log_line(capsys):
    # the log measured 6.01 GiB for the cache on a card the user says has 1 GiB: the error names the log's line, not
    # the --kv-cache-memory no one typed
    line = one_line(["explain", str(LOGS / "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log"), "--model", QWEN36_35B,
                     "--gpu-memory", "1GiB", *V033], capsys)
    assert line.startswith("mcache: the log's available_kv_cache_memory 6.01 GiB (EngineCore), line ")
    assert line.endswith(": at most the GPU's 1.0 GiB, got 6.01 GiB")


def test_a_settings_line_too_deep_to_read_is_a_note_not_a_silent_drop(tmp_path, capsys):
    path = tmp_path / "deep.log"
    path.write_text(RUN2.replace("'max_num_seqs': 1", "'max_num_seqs': " + "[" * 200 + "1" + "]" * 200))
    code, data = explain([str(path), "--model", QWEN36_35B, "--gdn-prefill-backend", "triton", *V033], capsys)
    line = next(n for n, text in enumerate(RUN2.splitlines(), 1) if "non-default args" in text)
    assert f"the settings on line {line} are not a Python literal mcache reads" in " ".join(data["notes"])


def test_a_speculative_config_that_is_no_mapping_is_not_read_as_one(tmp_path, capsys):
    path = tmp_path / "spec.log"
    path.write_text(RUN2.replace("'max_num_seqs': 1", "'max_num_seqs': 1, 'speculative_config': 'x'"))
    assert main(["explain", str(path), "--model", QWEN36_35B, "--gdn-prefill-backend", "triton", *V033]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


def test_a_long_start_up_error_is_cut_at_a_word_with_an_ellipsis():
    from mcache.core.explain import _gist

    assert _gist("short") == "short"
    assert _gist("aaaa bbbb cccc", most=11) == "aaaa bbbb …" and _gist("aaaa bbbb", most=9) == "aaaa bbbb"
