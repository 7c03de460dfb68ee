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
    "mla_kv_block_size": ("figure", "block_size"),
    "mamba_cache_blocks": ("figure", "mamba_cache_blocks"),
    "max_num_seqs": ("setting", "max_num_seqs"),
    "max_mamba_cache_size": ("figure", "max_mamba_cache_size"),
    "mamba_conv_state_gb": ("figure", "conv_state_gb"),
    "mamba_ssm_state_gb": ("figure", "ssm_state_gb"),
    "intermediate_ssm_state_cache_gb": ("figure", "intermediate_ssm_state_gb"),
    "kv_tokens": ("figure", "kv_tokens"),
    "k_size_gb": ("figure", "k_size_gb"),
    "v_size_gb": ("figure", "v_size_gb"),
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
        if isinstance(expected, dict):  # per rank: {TP0: 6.23, ...}
            expected = sorted(expected.values())
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

# file, the options that complete what the excerpt does not show (each from SOURCES.yaml's launch or thread), and
# the verdict of every figure.
REPRODUCED = [
    # vLLM 0.24 runs the Triton GDN prefill (the FlashInfer one came with 0.33, on Hopper; this is an RTX 5090)
    ("vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log", ["--model", QWEN36_35B, "--gdn-prefill-backend", "triton"],
     {"kv_cache_tokens": "agree", "max_concurrency": "agree"}),
    ("vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log", ["--model", QWEN36_35B, "--gdn-prefill-backend", "triton"],
     {"kv_cache_tokens": "agree", "max_concurrency": "agree"}),
    # the args line was cut off: TP 2, fp8 KV (SOURCES.yaml), and the speculative config this repository's other
    # Qwen3.6-27B boots show in full ({'method': 'mtp', 'num_speculative_tokens': 3}, the p2p logs)
    ("vllm/qwen36-27b-fp8-2x3090-dual-max-fp8kv.log", ["--model", QWEN35_27B, "--tp", "2", "--kv-cache-dtype", "fp8",
                                                      "--gdn-prefill-backend", "triton", "--num-speculative-tokens", "3"],
     {"kv_cache_tokens": "agree", "max_concurrency": "agree"}),
    # the MTP head's attention layer joins the 16 attention layers: groups of 17, so the 48 GDN layers take 3 padding
    ("vllm/qwen36-27b-fp8-2x3090-dual-max-fp8kv-profiling.log", ["--model", QWEN35_27B, "--num-speculative-tokens", "3"],
     {"padding_layers": "agree", "padding_waste_pct": "agree"}),
    # --max-mamba-cache-size, extra_buffer_lazy and --max-running-requests 1 are the thread's launch; the state is
    # bfloat16 (71.7 MiB a slot, the thread's figure: the Qwen3.5 config's float32 would be twice that); the weights
    # are not in the excerpt and do not change a pool of fixed slots (any that fits gives the same lines)
    *[(f"sglang/qwen38-27b-nvfp4-rtx5090-dflash12-mmcs{n}.log",
       ["--model", QWEN35_27B, "--gpu", "rtx-5090", "--weights", "16GiB", "--max-mamba-cache-size", str(n),
        "--mamba-radix-cache-strategy", "extra_buffer_lazy", "--max-running-requests", "1", "--mamba-ssm-dtype",
        "bfloat16"],
       {"max_mamba_cache_size": "agree", "conv_state_gb": "agree", "ssm_state_gb": "agree",
        # SGLang's DFLASH intermediate cache ((running + 1) x 12 drafts x the SSM slot): mcache prints no such line
        "intermediate_ssm_state_gb": "not modelled"}) for n in (4, 8)],
]


@pytest.mark.parametrize(("name", "args", "expected"), REPRODUCED, ids=[r[0] for r in REPRODUCED])
def test_a_public_log_is_reproduced(name, args, expected, capsys):
    code, data = explain([str(LOGS / name), *args, *V033], capsys)
    assert code == 0
    assert verdicts(data) == {figure: {verdict} for figure, verdict in expected.items()}
    assert data["findings"] == 0


FINDINGS = [
    # mcache's vLLM 0.33 profile takes FlashInfer's GDN prefill on any GPU (a checkpoint block per request and
    # 64-token alignment); the log's vLLM (0.24.0, RTX 5090) runs Triton's: 296 blocks of 2112 tokens, not 299 of 2096
    ("vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log", ["--model", QWEN36_35B],
     {"kv_cache_tokens": "differ", "max_concurrency": "differ"}, None),
    # DFlash's drafter is a model of its own whose attention layers share the KV pool: mcache's profile knows MTP
    # heads only, so it finds far more tokens than the engine
    *[(f"vllm/{name}.log", ["--model", QWEN35_27B, "--tp", "2", "--gdn-prefill-backend", "triton"],
       {"kv_cache_tokens": "differ", "max_concurrency": "differ"}, None)
      for name in ("qwen36-27b-dflash-2x3090-185k", "qwen36-27b-dflash-noviz-2x3090-200k")],
    # max_model_len 1,048,576 is the YaRN x4 --hf-overrides of the launch: mcache reads the config's 262,144 and stops
    # at vLLM's length check; the KV pool was nvfp4, which mcache does not model
    ("vllm/qwen36-27b-nvfp4-rtx5090-nvfp4kv-1m.log", ["--model", QWEN35_27B, "--num-speculative-tokens", "2"],
     {"padding_layers": "differ", "padding_waste_pct": "differ", "kv_cache_tokens": "differ",
      "max_concurrency": "differ"}, "User-specified max_model_len (1048576)"),
    # the excerpt measured nothing: mcache's estimate of the weights of the BF16 config (the checkpoint is FP8) leaves
    # no memory on the 48 GB card; the rule for slots per request (5 with extra_buffer) agrees
    ("sglang/qwopus36-27b-fp8-rtx6000ada-mrr-capped.log", ["--model", QWEN35_27B, "--gpu-memory", "49140MiB",
                                                            "--max-running-requests", "32"],
     {"max_running_requests_capped": "differ", "max_mamba_cache_size": "differ", "state_slots_per_request": "agree"},
     "Not enough GPU memory for hybrid"),
    # no measured memory either (the int4 AutoRound checkpoint's weights are not in the excerpt): the BF16 weights
    # mcache estimates leave a 24 GiB RTX 3090 no KV memory
    *[(f"vllm/qwen36-27b-int4-autoround-2x3090-mtp-{p2p}.log", ["--model", QWEN35_27B, "--gpu-memory", "24576MiB",
                                                               "--gdn-prefill-backend", "triton"],
       {"kv_cache_tokens": "differ", "max_concurrency": "differ"}, "No available memory for the cache blocks")
      for p2p in ("p2p-on", "p2p-off")],
]


@pytest.mark.parametrize(("name", "args", "expected", "why"), FINDINGS, ids=[f[0] for f in FINDINGS])
def test_a_public_log_mcache_disagrees_with_is_a_finding(name, args, expected, why, capsys):
    code, data = explain([str(LOGS / name), *args, *V033], capsys)
    assert code == 1
    assert verdicts(data) == {figure: {verdict} for figure, verdict in expected.items()}
    assert data["findings"] == sum(c["verdict"] == "differ" for c in data["comparisons"]) > 0
    if why:
        assert all(why in c["note"] for c in data["comparisons"] if c["verdict"] == "differ" and c["mcache"] is None)


# the logs that cannot be sized here, each for its reason (one line, exit 2)
NOT_SIZED = {
    # no args or config line: the model is not named (and no config of it is in the repository)
    **{f"vllm/{n}.log": "does not name the model" for n in (
        "qwen36-27b-dflash-noviz-2x4090-180k", "qwen38-27b-fp8-2x5090-64k", "qwen38-27b-rtx3090-dflash15-ctxfast",
        "qwen38-27b-rtx3090-dflash7-ctxlong", "qwen38-flash-next-gb10-blocksize", "xpu-hybrid-blocksize-528",
        "qwen36-27b-4x3090-tp4-blocksize-1600", "qwen38-flash-next-awq-8x4090-tp4-pp2", "qwen38-27b-fp8-2x3090-tp2-131k",
        "qwen38-dummy-h100-blocksize-544", "qwen-gdn-4xv100-1cat-blocksize-784", "kimi-mla-kda-tp16-multinode-blocksize-768",
        "qwen35-ci-b200-mamba-blocks-error", "qwen38-27b-h100-0.28.0-mamba-blocks-error",
        "qwen38-27b-2x7900xt-rocm-0.23.1-mamba-blocks-error", "qwen36-27b-fp8-h100-mamba-blocks-error",
        "qwen36-27b-h100-0.25.1-kaito-mamba-blocks-error", "qwen38-27b-fp8-rtxpro6000-mamba-blocks-error")},
    **{f"sglang/{n}.log": "does not name the model" for n in (
        "qwen35-moe-ktransformers-tp2-4090", "qwen38-27b-nvfp4-2x5090-dflash2-0.5.19", "qwen38-27b-nvfp4-rtx5090-dflash12-mmcs4",
        "qwen38-27b-nvfp4-rtx5090-dflash12-mmcs8", "qwopus36-27b-fp8-rtx6000ada-mrr-capped")},
    # a path on the author's machine
    "vllm/qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log": "is not here",
    "vllm/qwen36-27b-int4-autoround-2x3090-mtp-p2p-on.log": "is not here",
    # the excerpt ends before the cache is sized
    "vllm/qwen3-next-80b-awq8-4xgfx906-0.10.2.log": "ends before the cache is sized",
    "sglang/glm53-flash-nextn-4x-sm120-fp8kv.log": "ends before the cache is sized",
    "trtllm/nemotron-nano-9b-v2-nvfp4-rtx5060ti-1.2.0rc1.log": "ends before the cache is sized",
}


@pytest.mark.parametrize("name", sorted(NOT_SIZED))
def test_a_log_that_cannot_be_sized_says_why_in_one_line(name, capsys):
    assert NOT_SIZED[name] in one_line(["explain", str(LOGS / name)], capsys)


def test_every_public_log_is_sized_or_says_why():
    every = {e["file"] for e in SOURCES}
    covered = {r[0] for r in REPRODUCED} | {f[0] for f in FINDINGS} | set(NOT_SIZED)
    assert every <= covered, every - covered
    assert len(every) >= 35


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
    "bare-messages": "\n".join(_message(line) for line in [ARGS, *KV_LINES]),
    # two data-parallel engines, their lines interleaved; a worker of the second measured more memory, and each
    # figure is compared once per process that printed it
    "interleaved-ranks": "\n".join([ARGS, *(f"(EngineCore_DP{i % 2} pid=10{i % 2}) INFO 07-09 02:58:11 [x.py:1] "
                                            f"{_message(KV_LINES[i // 2])}" for i in range(6))]),
    # a one-line KV summary (newer releases) and the author's wrapping
    "one-line-and-wrapped": "\n".join([ARGS, KV_LINES[0], "GPU KV cache size: 569,878 tokens, Maximum concurrency for",
                                       "    131,072 tokens per request: 4.35x"]),
}


@pytest.mark.parametrize("variant", sorted(VLLM_VARIANTS))
def test_a_vllm_log_reads_the_same_in_every_format(variant, tmp_path, capsys):
    path = tmp_path / "boot.log"
    path.write_text(VLLM_VARIANTS[variant])
    code, data = explain([str(path), "--model", QWEN36_35B, "--gdn-prefill-backend", "triton", *V033], capsys)
    assert code == 0
    assert verdicts(data) == {"kv_cache_tokens": {"agree"}, "max_concurrency": {"agree"}}
    assert list(data["fed"]) == ["kv_cache_memory_bytes"] and abs(data["fed"]["kv_cache_memory_bytes"] - 6.01 * 2**30) < 1
    assert data["log"]["settings"]["max_num_seqs"] == 1


def test_a_vllm_log_cut_before_the_cache_is_sized_is_one_line(tmp_path, capsys):
    path = tmp_path / "cut.log"
    path.write_text("\n".join([ARGS, KV_LINES[0]]))
    assert "ends before the cache is sized" in one_line(["explain", str(path), "--model", QWEN36_35B], capsys)


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
    assert "missing.log: file: a readable UTF-8 log" in one_line(["explain", str(tmp_path / "missing.log")], capsys)
    old = tmp_path / "old.log"
    old.write_text("(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.1.5\n" + RUN2)
    line = one_line(["explain", str(old), "--model", QWEN36_35B], capsys)
    assert line.startswith("mcache: --engine-version: ") and "the log says 0.1.5" in line
    source = tmp_path / "source.log"
    source.write_text("INFO 08-30 [api_server.py:1] vLLM API server version 0.1.dev20073+g8e685d198\n" + RUN2)
    assert "names no release" in one_line(["explain", str(source), "--model", QWEN36_35B], capsys)
