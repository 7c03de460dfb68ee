"""`mcache plan --from-log LOG` (issues 31, 32): the non-KV memory a real start measured, read by `mcache explain`'s
readers, sizes every candidate on the log's GPU kind; the figure is checked by hand from the log's own lines (the
public logs of tests/data/engine_logs, and hand-made variants where no public log has the line), a candidate at the
log's layout gives back the KV budget the engine measured, and every bad input is one line."""

from __future__ import annotations

import json
from math import ceil
from pathlib import Path

import pytest
from cli_util import one_line, plan_json
from paths import HERE, HF_CONFIGS
from typer.testing import CliRunner

from mcache.cli.main import app
from mcache.core.deployment import Deployment
from mcache.core.engines.vllm import EXTENSIBLE_UTILIZATION
from mcache.core.load import load_spec
from mcache.core.options import SizeOptions
from mcache.core.report import size_report
from mcache.core.sizing.gpus import find_gpu
from mcache.core.sizing.layout import ParallelLayout

runner = CliRunner()
LOGS = HERE / "data" / "engine_logs"
GIB = 1 << 30
QWEN36_35B = str(HF_CONFIGS / "qwen3.6-35b-a3b.json")
RUN1 = str(LOGS / "vllm" / "qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run1.log")  # Available KV cache memory: 5.98 GiB
RUN2 = str(LOGS / "vllm" / "qwen36-35b-a3b-nvfp4-rtx5090-0.24.0-run2.log")  # 6.01 GiB
KTRANSFORMERS = str(LOGS / "sglang" / "qwen35-moe-ktransformers-tp2-4090.log")  # avail mem=19.08 GB, mem usage=3.76 GB
RTX5090 = find_gpu("rtx-5090").memory
RTX4090 = find_gpu("rtx-4090").memory


def vllm_plan(log: str, *extra: str) -> dict:
    return plan_json(QWEN36_35B, "--gpu", "rtx-5090,h200", "--context", "131072", "--tp", "1,2", "--pp", "1",
                     "--kv-dtype", "fp8", "--weights", "19GiB", "--from-log", log, "--log-gpu", "rtx-5090", *extra)


@pytest.mark.parametrize(("log", "kv_gib"), [(RUN1, 5.98), (RUN2, 6.01)])
def test_vllm_non_kv_memory_is_the_budget_less_the_weights_less_the_measured_kv(log, kv_gib):
    plan = vllm_plan(log)
    carried = plan["from_log"]["carried"]
    # by hand: the newest vLLM's gpu_memory_utilization (the log names no version; 1.0 from 0.34, whose extensible KV
    # cache measures its budget) of the RTX 5090, less the weights given, less the log's "Available KV cache memory"
    assert carried["value"] == ceil(RTX5090 * EXTENSIBLE_UTILIZATION) - 19 * GIB - round(kv_gib * GIB)
    assert carried["field"] == "reserve" and plan["engine"] == "vllm" and plan["from_log"]["tp"] == 1
    assert {(c["gpu"], c["measured"]) for c in plan["candidates"]} == {("rtx-5090", True), ("h200", False)}


def test_the_two_boots_carry_exactly_their_measured_difference():
    first, second = (vllm_plan(log)["from_log"]["carried"]["value"] for log in (RUN1, RUN2))
    assert first - second == round(6.01 * GIB) - round(5.98 * GIB)


def test_a_candidate_at_the_log_s_layout_gets_back_the_kv_budget_the_engine_measured():
    carried = vllm_plan(RUN1)["from_log"]["carried"]["value"]
    spec = load_spec(QWEN36_35B)
    options = SizeOptions(reserve=carried, weights=19 * GIB, max_seq_len=131072, kv_dtype="fp8")
    report = size_report(spec, Deployment(ParallelLayout(), ("rtx-5090", RTX5090), "vllm", options), QWEN36_35B).data
    assert report["engine"]["stages"][0]["available_kv_cache_memory_bytes"] == round(5.98 * GIB)


def test_candidates_on_another_gpu_keep_mcache_s_assumptions():
    with_log = vllm_plan(RUN1)
    without = plan_json(QWEN36_35B, "--gpu", "rtx-5090,h200", "--context", "131072", "--tp", "1,2", "--pp", "1",
                        "--kv-dtype", "fp8", "--weights", "19GiB", "--engine", "vllm")
    key = ("gpu", "tp", "kv_dtype", "sequences", "startup")

    def rows(plan: dict, gpu: str) -> list:
        return sorted(tuple(c[k] for k in key) for c in plan["candidates"] if c["gpu"] == gpu)

    assert rows(with_log, "h200") == rows(without, "h200")
    assert rows(with_log, "rtx-5090") != rows(without, "rtx-5090")  # 4.32 GiB measured, not the 2 GiB assumed


def test_the_weights_estimate_stands_in_when_the_log_measured_none():
    plan = plan_json(QWEN36_35B, "--gpu", "rtx-5090", "--context", "131072", "--tp", "1", "--pp", "1", "--kv-dtype",
                     "fp8", "--weight-format", "nvfp4", "--from-log", RUN1, "--log-gpu", "rtx-5090")
    carried = plan["from_log"]["carried"]
    spec = load_spec(QWEN36_35B)
    from mcache.core.sizing.weights import weighed_as

    report = size_report(weighed_as(spec, "nvfp4"), Deployment(ParallelLayout(), ("rtx-5090", RTX5090), "vllm"),
                         QWEN36_35B).data
    weights = report["engine"]["settings"]["weights_bytes"]
    assert carried["value"] == ceil(RTX5090 * EXTENSIBLE_UTILIZATION) - weights - round(5.98 * GIB)
    assert "mcache's estimate at tp 1 pp 1" in carried["how"]


def test_sglang_carries_the_free_memory_it_found_before_loading_the_weights():
    plan = plan_json(QWEN36_35B, "--gpu", "rtx-4090,h200", "--context", "8192", "--tp", "2", "--pp", "1", "--kv-dtype",
                     "default", "--weights", "10GiB", "--from-log", KTRANSFORMERS, "--log-gpu", "rtx-4090")
    carried = plan["from_log"]["carried"]
    assert plan["engine"] == "sglang" and carried["field"] == "free_memory_before_load"
    assert carried["value"] == round((19.08 + 3.76) * GIB)  # avail mem after the load + what the load took
    assert carried["non_kv"] == RTX4090 - carried["value"]
    measured = [c for c in plan["candidates"] if c["measured"]]
    assert measured and all(c["gpu"] == "rtx-4090" for c in measured)
    # the same replica through mcache size, given the measured free memory
    size = runner.invoke(app, ["size", QWEN36_35B, "--engine", "sglang", "--gpu", "rtx-4090", "--tp", "2", "--weights",
                               "10GiB", "--max-seq-len", "8192", "--free-memory-before-load", f"{carried['value']}B",
                               "--format", "json"])
    assert size.exit_code == 0, size.output
    assert json.loads(size.stdout)["engine"]["max_running_requests"] == measured[0]["sequences_per_replica"]


def _trtllm_log(tmp_path, reserve: int) -> tuple[str, int, int]:
    """A hand-made TensorRT-LLM 1.2 log (no public one prints its memory lines): the lines mcache's own profile prints
    for Nemotron-3-Nano on an H200 at a known non-KV memory, with the engine's prefixes (max_batch_size 64: its
    MambaHybridCacheManager allocates the state before profiling, so the peak holds it); the weights and that state."""
    spec = load_spec("nemotron-3-nano-30b-a3b")
    h200 = find_gpu("h200").memory
    d = Deployment(ParallelLayout(), ("h200", h200), "trtllm", SizeOptions(reserve=reserve, max_seq_len=8192, max_batch=64),
                   engine_version="1.2.0")
    report = size_report(spec, d, "nemotron-3-nano-30b-a3b").data
    stage = report["engine"]["stages"][0]
    assert stage["startup_error"] is None and not stage["state_in_kv_budget"] and stage["fixed_cost_bytes"] > 0
    lines = ["TensorRT-LLM version: 1.2.0", "max_batch_size=64", *stage["log"]]
    path = tmp_path / "trtllm.log"
    path.write_text("".join(f"[TRT-LLM] [I] {line}\n" for line in lines))
    return str(path), report["engine"]["settings"]["weights_bytes"], stage["fixed_cost_bytes"]


def test_trtllm_non_kv_memory_is_the_profiled_peak_less_the_weights(tmp_path):
    reserve = round(3.3 * GIB)
    log, weights, state = _trtllm_log(tmp_path, reserve)
    peak = next(float(line.split(": ")[1].split()[0]) for line in Path(log).read_text().splitlines()
                if "Peak memory" in line)
    plan = plan_json("nemotron-3-nano-30b-a3b", "--gpu", "h200,b200", "--context", "8192", "--tp", "1", "--pp", "1",
                     "--kv-dtype", "default", "--from-log", log, "--log-gpu", "h200")
    carried = plan["from_log"]["carried"]
    assert plan["engine"] == "trtllm" and carried["version"] == "1.2.0"
    assert carried["value"] == round(peak * GIB) - weights - state  # the peak as printed, less the weights and state
    assert abs(carried["value"] - reserve) <= GIB // 200  # the printed peak's rounding: 0.005 GiB
    assert {(c["gpu"], c["measured"]) for c in plan["candidates"]} == {("h200", True), ("b200", False)}


def test_the_table_says_what_was_measured_and_which_candidates_used_it(capsys):
    from mcache.cli.main import main

    assert main(["plan", QWEN36_35B, "--gpu", "rtx-5090,h200", "--context", "131072", "--tp", "1", "--pp", "1",
                 "--kv-dtype", "fp8", "--weights", "19GiB", "--from-log", RUN1, "--log-gpu", "rtx-5090"]) == 0
    out = capsys.readouterr().out
    non_kv = (ceil(RTX5090 * EXTENSIBLE_UTILIZATION) - 19 * GIB - round(5.98 * GIB)) / GIB
    assert f"(vLLM at tp 1 pp 1; the log names no version: sized as the newest mcache models): non-KV memory " \
           f"{non_kv:.2f} GiB = ceil(" in out
    assert "to the 1 candidates on NVIDIA GeForce RTX 5090 (memory: measured)" in out
    rows = {line.split("│")[2].strip(): line.split("│")[-2].strip() for line in out.splitlines() if line.startswith("│")}
    assert rows == {"rtx-5090": "measured", "h200": "assumed"}


HAND_KV_SET = ("(EngineCore pid=1) INFO 07-06 22:52:09 [gpu_worker.py:508] Available KV cache memory: 5.98 GiB\n"
               "(EngineCore pid=1) INFO 07-06 22:52:09 [kv_cache_utils.py:2146] GPU KV cache size: 567,978 tokens\n"
               "(APIServer pid=1) INFO 07-06 22:50:34 [api_utils.py:273] non-default args: {'model': 'x', "
               "'kv_cache_memory_bytes': 6420000000}\n")


@pytest.mark.parametrize(("args", "needle"), [
    (["--from-log", RUN1, "--engine", "sglang", "--log-gpu", "rtx-5090"], "is a vLLM log"),
    (["--from-log", RUN1, "--engine", "none", "--log-gpu", "rtx-5090"], "not mcache's neutral model's"),
    (["--from-log", RUN1], "--log-gpu: the GPU the vLLM log ran on"),
    (["--from-log", RUN1, "--log-gpu", "h200"], "--log-gpu: one of the GPUs planned for"),
    (["--from-log", RUN1, "--log-gpu", "no-such-gpu"], "--log-gpu: one of the GPUs planned for"),
    (["--from-log", str(LOGS / "vllm" / "qwen36-27b-4x3090-tp4-blocksize-1600.log"), "--log-gpu", "rtx-5090"],
     "measured no memory to carry: it has no 'Available KV cache memory' line"),
    (["--from-log", str(LOGS / "trtllm" / "nemotron-nano-9b-v2-nvfp4-rtx5060ti-1.2.0rc1.log"), "--log-gpu", "rtx-5090"],
     "measured no memory to carry: it has no 'Peak memory during memory usage profiling' line"),
    (["--from-log", RUN1, "--log-gpu", "rtx-5090", "--weights", "40GiB"], "leave no non-KV memory"),
    (["--from-log", KTRANSFORMERS, "--log-gpu", "rtx-5090", "--log-tp", "2"], None),  # a bigger GPU is fine
    (["--log-gpu", "rtx-5090"], "give --from-log LOG"),
    (["--from-log", str(HERE / "no-such.log"), "--log-gpu", "rtx-5090"], "no-such.log"),
    (["--engine-version", "0.24.0"], "give --engine too"),
])
def test_bad_from_log_input_is_one_line(args, needle, capsys):
    argv = ["plan", QWEN36_35B, "--gpu", "rtx-5090", "--context", "8192", "--tp", "1", "--pp", "1", "--kv-dtype",
            "default", "--weights", "19GiB", *args]
    if needle is None:
        from mcache.cli.main import main

        assert main(argv) == 0
        return
    assert needle in one_line(argv, capsys)


def test_a_log_whose_kv_budget_was_set_measured_none(tmp_path, capsys):
    log = tmp_path / "set.log"
    log.write_text(HAND_KV_SET)
    line = one_line(["plan", QWEN36_35B, "--gpu", "rtx-5090", "--context", "8192", "--tp", "1", "--pp", "1",
                     "--from-log", str(log), "--log-gpu", "rtx-5090"], capsys)
    assert "set (kv_cache_memory_bytes in its args), not measured" in line


def test_a_log_of_another_model_is_one_line(capsys):
    line = one_line(["plan", "nemotron-3-nano-30b-a3b", "--gpu", "rtx-4090", "--context", "8192", "--tp", "1", "--pp",
                     "1", "--from-log", KTRANSFORMERS, "--log-gpu", "rtx-4090"], capsys)
    assert "the log's model is a Qwen3_5MoeForConditionalGeneration" in line


def test_an_sglang_log_of_a_larger_gpu_is_one_line(tmp_path, capsys):
    line = one_line(["plan", QWEN36_35B, "--gpu", "l4", "--context", "8192", "--tp", "2", "--pp", "1", "--weights",
                     "10GiB", "--from-log", KTRANSFORMERS, "--log-gpu", "l4"], capsys)
    assert "free before loading its weights, more than the" in line


def test_the_plan_weighs_the_model_as_the_log_s_quantization_names_it(tmp_path):
    log = tmp_path / "modelopt_fp4.log"  # the method that names its format (the checkpoint is NVFP4)
    log.write_text(Path(RUN1).read_text().replace("'quantization': 'modelopt'", "'quantization': 'modelopt_fp4'"))
    plan = plan_json(QWEN36_35B, "--gpu", "rtx-5090", "--context", "131072", "--tp", "1", "--pp", "1", "--kv-dtype",
                     "fp8", "--from-log", str(log), "--log-gpu", "rtx-5090")
    assert "weights weighed as nvfp4: the log's quantization=modelopt_fp4 (line 4)" in plan["notes"]
    from mcache.core.sizing.weights import weighed_as

    report = size_report(weighed_as(load_spec(QWEN36_35B), "nvfp4"), Deployment(ParallelLayout(), ("rtx-5090", RTX5090),
                                                                                 "vllm"), QWEN36_35B).data
    weights = report["engine"]["settings"]["weights_bytes"]
    # by hand, as above: the non-KV memory is the budget less the NVFP4 weights less the measured KV
    assert plan["from_log"]["carried"]["value"] == ceil(RTX5090 * EXTENSIBLE_UTILIZATION) - weights - round(5.98 * GIB)
    given = plan_json(QWEN36_35B, "--gpu", "rtx-5090", "--context", "131072", "--tp", "1", "--pp", "1", "--kv-dtype",
                      "fp8", "--weight-format", "fp8", "--from-log", str(log), "--log-gpu", "rtx-5090", "--weights",
                      "19GiB")
    assert "weights weighed as fp8: given with --weight-format" in given["notes"]


def test_a_method_of_several_formats_is_said_not_weighed():
    notes = vllm_plan(RUN1)["notes"]  # --weights given: the log's modelopt is not weighed
    assert any("quantization=modelopt" in n and "--weights gives the weights one rank loads" in n for n in notes)
