"""`mcache plan`: its candidates are `mcache size` run on each layout, its settings parse back to the layout, the
target picks the fewest GPUs, and the plots are written."""

from __future__ import annotations

import argparse
import json
import shlex
import sys

import pytest
from cli_util import plan_json, size_json
from paths import HERE
from typer.testing import CliRunner

from mcache.cli.main import app, main
from mcache.core.load import load_spec
from mcache.core.plan import Axes, catalogue_gpu, sweep

runner = CliRunner()


def gpus(*names: str):
    return tuple(catalogue_gpu(name) for name in names)


def test_neutral_candidates_are_mcache_size_run_on_their_pasted_settings():
    plan = plan_json("nemotron-h-8b", "--gpu", "h200,h100-80gb", "--context", "8192,65536", "--tp", "1,2", "--pp", "1,2")
    assert len(plan["candidates"]) == 2 * 2 * 4 * 2  # GPUs x contexts x layouts x KV dtypes
    for c in plan["candidates"]:
        argv = shlex.split(c["settings"])
        assert argv[:2] == ["mcache", "size"]
        report = size_json(argv[2:])
        cap = report["capacity"]["ranks"][report["capacity"]["tightest_stage"]]
        assert (report["layout"]["tp"], report["layout"]["pp"], report["runtime"]["max_seq_len"]) == (c["tp"], c["pp"], c["context"])
        assert (cap["max_sequences"], cap["binding"], report["capacity"]["fits"]) == (c["sequences"], c["binding"], c["fits"])
        assert report["dtypes"]["kv"] == c["kv_dtype"] and report["dtypes"]["ssm"] == c["ssm_dtype"]


ENGINE_FLAGS = {  # the flag of each engine's settings line -> the mcache size option that sets the same
    "vllm": {"--tensor-parallel-size": "--tp", "--pipeline-parallel-size": "--pp", "--max-model-len": "--max-seq-len",
             "--kv-cache-dtype": "--kv-dtype", "--mamba-ssm-cache-dtype": "--ssm-dtype"},
    "sglang": {"--tp-size": "--tp", "--pp-size": "--pp", "--context-length": "--max-seq-len",
               "--kv-cache-dtype": "--kv-dtype", "--mamba-ssm-dtype": "--ssm-dtype"},
}


def parse_engine_line(engine: str, line: str) -> dict[str, str]:
    """The settings line as the engine's own argument parser would read it (the flags this test knows)."""
    parser = argparse.ArgumentParser()
    for flag in ENGINE_FLAGS[engine]:
        parser.add_argument(flag)
    parser.add_argument("--disable-radix-cache", action="store_true")
    parser.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction)
    known, _ = parser.parse_known_args(shlex.split(line)[3 if engine == "vllm" else 5:])
    return {ENGINE_FLAGS[engine][flag]: value for flag in ENGINE_FLAGS[engine]
            if (value := getattr(known, flag.lstrip("-").replace("-", "_"))) is not None}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engine_candidates_parse_back_and_match_mcache_size(engine):
    plan = plan_json("qwen3.5-27b", "--gpu", "h200", "--context", "32768", "--tp", "1,2", "--pp", "1",
                     "--engine", engine, "--ssm-dtype", "default,float32")
    for c in plan["candidates"]:
        options = parse_engine_line(engine, c["settings"])
        assert (int(options["--tp"]), int(options["--max-seq-len"])) == (c["tp"], c["context"])
        args = ["qwen3.5-27b", "--gpu", "h200", "--engine", engine, *(x for kv in options.items() for x in kv)]
        engine_run = size_json(args)["engine"]
        assert engine_run["max_running_requests"] == c["sequences"]
        assert engine_run["dtypes"]["ssm"] == c["ssm_dtype"] and engine_run["dtypes"]["kv"] == c["kv_dtype"]


def test_trtllm_settings_are_llm_api_options():
    plan = plan_json("nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--tp", "2", "--pp", "1,2", "--engine",
                     "trtllm")
    for c in plan["candidates"]:
        options = json.loads(c["settings"])
        assert (options["tensor_parallel_size"], options["pipeline_parallel_size"], options["max_seq_len"]) == (
            c["tp"], c["pp"], 8192)
        assert options.get("kv_cache_config", {}).get("dtype") == (None if c["kv_dtype"] == "bfloat16" else "fp8")


def test_weights_that_do_not_fit_one_gpu_fail_at_tp_1_and_the_smallest_tp_is_what_size_names(capsys):
    """Nemotron-H-56B's bf16 weights (about 105 GiB) exceed an H100-80GB."""
    plan = plan_json("nemotron-h-56b", "--gpu", "h100-80gb", "--context", "8192", "--pp", "1", "--kv-dtype", "default")
    fits = {c["tp"]: c["fits"] for c in plan["candidates"]}
    assert fits[1] is False and fits[2] is True
    assert main(["size", "nemotron-h-56b", "--gpu", "h100-80gb", "--max-seq-len", "8192"]) == 3
    assert "--tp 2" in capsys.readouterr().err


def test_the_target_picks_the_fewest_gpus_that_reach_it():
    spec = load_spec("qwen3-next-80b-a3b")
    plan = sweep(spec, "qwen3-next-80b-a3b", None, Axes(gpus=gpus("h200", "h100-80gb"), contexts=(32768,)), 500)
    for c in plan.candidates:  # replicas of one sized layout: as few as reach 500
        if c.fits:
            assert c.replicas * c.sequences_per_replica == c.sequences >= 500
            assert (c.replicas - 1) * c.sequences_per_replica < 500 and c.gpus == c.replicas * c.tp * c.pp
    reaching = [c for c in plan.candidates if c.fits and c.gpus <= 64]
    fewest = min(c.gpus for c in reaching)
    assert plan.best.gpus == fewest and plan.best.sequences >= 500
    assert plan.best.sequences_per_gpu == max(c.sequences_per_gpu for c in reaching if c.gpus == fewest)
    assert [(c.gpus, -c.sequences_per_gpu) for c in plan.candidates[: len(reaching)]] == sorted(
        (c.gpus, -c.sequences_per_gpu) for c in reaching)
    for gpu, c in plan.best_by_gpu.items():
        mine = [r for r in reaching if r.gpu == gpu]
        assert c.gpus == min(r.gpus for r in mine)
    unreachable = sweep(spec, "qwen3-next-80b-a3b", None, Axes(gpus=gpus("h200"), contexts=(32768,), tps=(1, 2),
                                                               pps=(1,)), 100_000)
    assert unreachable.best is None and unreachable.best_by_gpu == {}
    assert unreachable.nearest.gpus == min(c.gpus for c in unreachable.candidates if c.fits) > 64


def test_a_fleet_is_replicas_of_the_layout_mcache_size_sizes_and_its_settings_start_them_all():
    """5,000 sequences of 128K of Qwen3-Next on H200s under vLLM: one replica is sized (TP 2, PP 2 runs 222 with an
    fp8 KV cache; its MTP layer is not loaded without drafts), the fleet is ceil(5000 / 222) = 23 replicas of 4 GPUs =
    92 GPUs, 222 / 4 = 55.5 sequences per GPU; the pasted line, its --data-parallel-size dropped, is the replica
    `mcache size --engine vllm` sizes. At vLLM 0.33 (its 0.92 utilization: 0.34's extensible KV cache takes all)."""
    args = ["qwen3-next-80b-a3b", "--gpu", "h200", "--context", "131072", "--target-concurrency", "5000", "--engine",
            "vllm", "--engine-version", "0.33.0", "--tp", "2", "--pp", "2", "--kv-dtype", "fp8", "--max-gpus", "128"]
    best = plan_json(*args)["best"]
    assert (best["replicas"], best["gpus"], best["sequences_per_replica"], best["sequences"]) == (23, 92, 222, 23 * 222)
    assert best["sequences_per_gpu"] == 55.5
    argv = shlex.split(best["settings"])
    assert argv[-2:] == ["--data-parallel-size", "23"]
    options = parse_engine_line("vllm", shlex.join(argv[:-2]))
    replica = size_json(["qwen3-next-80b-a3b", "--gpu", "h200", "--engine", "vllm", "--engine-version", "0.33.0",
                         *(x for kv in options.items() for x in kv)])["engine"]
    assert replica["max_running_requests"] == 222
    capped = plan_json(*args[:-2])  # the default --max-gpus 64: no fleet reaches it, the nearest is named
    assert capped["best"] is None and capped["nearest"]["gpus"] == 92
    table = runner.invoke(app, ["plan", *args[:-2]])
    assert "no candidate can run 5000 sequences on at most 64 GPUs; the fewest that can: 92 x h200 (23 replicas" in (
        table.output) and "(--max-gpus 92)" in table.output


def test_sglang_replicas_are_its_dp_size_and_trtllm_replicas_are_one_start_each():
    sglang = plan_json("nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--target-concurrency", "2000",
                       "--engine", "sglang", "--tp", "1", "--pp", "1", "--kv-dtype", "default")["best"]
    per = sglang["sequences_per_replica"]
    assert sglang["replicas"] == -(-2000 // per) > 1
    argv = shlex.split(sglang["settings"])
    assert argv[argv.index("--dp-size") + 1] == str(sglang["replicas"])
    table = runner.invoke(app, ["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--target-concurrency",
                                "2000", "--engine", "trtllm", "--tp", "1", "--pp", "1", "--kv-dtype", "default"])
    assert "TensorRT-LLM: start" in table.output and "replicas with these options" in table.output


def test_a_tp_list_with_no_split_of_the_model_is_one_line(capsys):
    assert main(["plan", "lfm2-1.2b", "--gpu", "h200", "--tp", "3", "--pp", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcache: --tp") and "none of those asked is" in err and err.count("\n") == 1, err


def test_without_a_target_best_is_the_most_sequences_per_gpu():
    plan = sweep(load_spec("nemotron-h-8b"), "nemotron-h-8b", None, Axes(gpus=gpus("h200"), contexts=(8192,)))
    assert plan.best.sequences_per_gpu == max(c.sequences_per_gpu for c in plan.candidates if c.fits)


def test_progress_reports_every_candidate():
    calls = []
    sweep(load_spec("mamba2-2.7b"), "mamba2-2.7b", None, Axes(gpus=gpus("h200"), contexts=(8192,)),
          progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 16) for i in range(1, 17)]  # 8 layouts (TP 1-8 x PP 1-2) x 2 KV dtypes


def test_impossible_splits_are_skipped_and_said():
    plan = plan_json("lfm2-1.2b", "--gpu", "h200", "--context", "8192", "--tp", "1,3", "--pp", "1")
    assert {c["tp"] for c in plan["candidates"]} == {1}
    assert plan["skipped"] and "tp 3 pp 1" in plan["skipped"][0]


def test_table_and_markdown_show_the_best_and_its_settings():
    best = plan_json("nemotron-h-8b", "--gpu", "h200", "--context", "8192")["best"]
    table = runner.invoke(app, ["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--top", "3"])
    assert table.exit_code == 0, table.output
    assert (f"best for the most sequences per GPU: {best['gpus']} x h200 (tp {best['tp']}, pp {best['pp']})"
            in table.output)
    assert f"\n  {best['settings']}\n" in table.output
    assert "(13 more candidates" in table.output
    md = runner.invoke(app, ["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--format", "markdown"])
    assert md.output.startswith("### nemotron-h-8b") or md.output.startswith("### Nemotron-H-8B")
    assert "| # | gpu | replicas | tp |" in md.output and "```sh" in md.output
    csv_out = runner.invoke(app, ["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--format", "csv"])
    assert csv_out.output.splitlines()[0].endswith(",settings") and len(csv_out.output.splitlines()) == 1 + 16


def test_a_table_renders_only_the_rows_it_shows(monkeypatch):
    """A table or markdown plan builds the `--top` rows it prints (csv all of them), and asks once per render whether
    any candidate has attention DP: it asked once a row, quadratic in a sweep of thousands (2.9 of 7 s at 4,800)."""
    from mcache.cli import plan_output

    calls = {"cells": 0, "dp": 0}
    cells, any_dp = plan_output._cells, plan_output._any_dp
    monkeypatch.setattr(plan_output, "_cells", lambda *a: calls.__setitem__("cells", calls["cells"] + 1) or cells(*a))
    monkeypatch.setattr(plan_output, "_any_dp", lambda r: calls.__setitem__("dp", calls["dp"] + 1) or any_dp(r))
    args = ["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192"]
    for fmt, rows in (("table", 3), ("markdown", 3), ("csv", 16)):
        calls.update(cells=0, dp=0)
        assert runner.invoke(app, [*args, "--top", "3", "--format", fmt]).exit_code == 0
        assert calls == {"cells": rows, "dp": 2}, fmt  # the rows' cells and the header's column


def test_more_draft_tokens_than_any_engine_drafts_are_one_line(capsys):
    """`--draft` stops at 256 (a plan's list of thousands swept for minutes); 256 itself sizes."""
    for command in (["size", "nemotron-h-8b", "--draft", "257"], ["plan", "nemotron-h-8b", "--gpu", "h200",
                                                                  "--draft", ",".join(map(str, range(5000)))]):
        assert main(command) == 2
        assert capsys.readouterr().err.strip() == "mcache: --draft: an integer from 0 to 256, got 257"
    assert main(["size", "nemotron-h-8b", "--draft", "256", "--format", "json"]) == 0


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG\r\n\x1a\n"), (".svg", b"<?xml")])
def test_plot_is_written(tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"plan{suffix}"
    result = runner.invoke(app, ["plan", "nemotron-h-8b", "--gpu", "h200,h100-80gb", "--plot", str(path)])
    assert result.exit_code == 0, result.output
    data = path.read_bytes()
    assert data.startswith(magic) and len(data) > 10_000


def test_plot_without_matplotlib_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert main(["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--plot", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert err == "mcache: --plot: needs matplotlib: pip install 'mcache[plot]'\n"


@pytest.mark.parametrize(("args", "needle"), [
    (["--target-concurrency", "10"], "--target-concurrency: one --context to reach it at, got 3"),
    (["--prefix-caching", "on"], "--prefix-caching: mcache's profile has no prefix caching setting"),
    (["--gpu", "h300"], "--gpu: one of h100-80gb"),
    (["--context", "8k"], "--context: integers separated by commas"),
    (["--engine", "trtllm", "--prefix-caching", "off"], "--prefix-caching: TensorRT-LLM's profile"),
    (["--engine", "vllm", "--spec-scheme", "replay"], "--spec-scheme: the neutral model's speculative scheme"),
    (["--engine", "sglang", "--kv-dtype", "int4"], "--kv-dtype: one of auto"),
    (["--plot", "plan.txt"], "--plot: a .png or .svg file"),
    (["--prefix-caching", "maybe"], "--prefix-caching: values among default, on, off"),
])
def test_bad_plan_input_is_one_line(args, needle, capsys):
    assert main(["plan", "nemotron-h-8b", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_an_engine_that_does_not_load_the_model_says_so_once(capsys):
    # TensorRT-LLM registers no JambaForCausalLM: every layout stops at start-up with its own words
    main(["plan", "jamba-v0.1", "--engine", "trtllm", "--gpu", "h200"])
    out = capsys.readouterr().out
    assert ('no candidate starts: TensorRT-LLM stops every one with "Unknown architecture for AutoModelForCausalLM: '
            'JambaForCausalLM"') in out


def test_the_progress_bar_appears_only_on_a_slow_sweep(monkeypatch):
    from mcache.cli import plan as plan_cli

    quick = plan_cli.Progress(terminal=True)
    quick.update(1, 10)
    assert quick.bar is None  # within PROGRESS_AFTER_S: no bar
    monkeypatch.setattr(plan_cli, "PROGRESS_AFTER_S", 0.0)
    piped = plan_cli.Progress(terminal=False)
    piped.update(1, 10)
    assert piped.bar is None  # not a terminal: never a bar (the README's examples run piped, whatever the load)
    slow = plan_cli.Progress(terminal=True)
    slow.update(1, 10)
    assert slow.bar is not None and slow.bar.tasks[0].completed == 1
    slow.update(10, 10)
    assert slow.bar.tasks[0].completed == 10
    slow.stop()
    assert slow.bar.finished



def test_a_custom_gpu_and_budget_apply_to_every_candidate_as_mcache_size_weighs_them():
    """An 80 GiB card at utilization 0.8 with a 1 GiB reserve and 10 GiB of weights: the caches get
    int(80 GiB x 0.8) - 11 GiB = 56,908,316,672 B; Nemotron-H-8B's 4 attention layers hold 4 x 2 (K, V) x 8 heads
    x 128 x 2 B = 16 KiB a token, 128 MiB a sequence of 8192, besides its Mamba2 state."""
    args = ["nemotron-h-8b", "--gpu-memory", "80GiB:card", "--utilization", "0.8", "--reserve", "1GiB", "--weights",
            "10GiB", "--tp", "1", "--pp", "1", "--kv-dtype", "default", "--context", "8192"]
    (c,) = plan_json(*args)["candidates"]
    assert c["gpu"] == "card" and c["roofline"] is None  # a custom card's bandwidth is unknown
    report = size_json(shlex.split(c["settings"])[2:])
    rank = report["capacity"]["ranks"][0]
    budget = int(80 * 2**30 * 0.8) - 11 * 2**30
    assert rank["cache_budget_bytes"] == budget == 56_908_316_672
    assert rank["kv_bytes_per_sequence"] == 4 * 2 * 8 * 128 * 2 * 8192
    assert c["sequences"] == rank["max_sequences"] == budget // (rank["kv_bytes_per_sequence"]
                                                                + rank["state_bytes_per_sequence"]) == 305


def test_a_weight_format_weighs_as_the_estimate_weighs_a_quantized_checkpoint():
    """--weight-format fp8 sizes exactly as --weights <the fp8 spec's rank bytes>: one weight estimate."""
    from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig
    from mcache.core.sizing.rank import RankContext, resolve_dtypes
    from mcache.core.sizing.weights import rank_weight_bytes, weighed_as

    spec = load_spec("nemotron-h-8b")
    fp8 = weighed_as(spec, "fp8")
    ctx = RankContext.build(fp8, ParallelLayout(), RuntimeConfig(), resolve_dtypes(fp8), 0)
    bf16 = RankContext.build(spec, ParallelLayout(), RuntimeConfig(), resolve_dtypes(spec), 0)
    assert rank_weight_bytes(ctx) < rank_weight_bytes(bf16)
    common = ["nemotron-h-8b", "--gpu", "h200", "--tp", "1", "--pp", "1", "--kv-dtype", "default", "--context", "8192"]
    by_format = plan_json(*common, "--weight-format", "fp8")["candidates"][0]
    by_bytes = plan_json(*common, "--weights", f"{rank_weight_bytes(ctx)}B")["candidates"][0]
    assert by_format["sequences"] == by_bytes["sequences"] > plan_json(*common)["candidates"][0]["sequences"]


def test_the_spec_scheme_is_honoured_for_every_draft_candidate():
    plan = plan_json("qwen3-next-80b-a3b", "--gpu", "h200", "--tp", "2", "--pp", "1", "--context", "8192",
                     "--kv-dtype", "default", "--draft", "0,2", "--spec-scheme", "replay,intermediate")
    schemes = sorted((c["draft"], c["spec_scheme"]) for c in plan["candidates"])
    assert schemes == [(0, "none"), (2, "intermediate"), (2, "replay")]
    for c in plan["candidates"]:
        if c["draft"]:
            argv = shlex.split(c["settings"])
            assert argv[argv.index("--spec-scheme") + 1] == c["spec_scheme"]
            assert size_json(argv[2:])["capacity"]["max_sequences"] == c["sequences"]


@pytest.mark.parametrize(("args", "needle"), [
    (["--spec-scheme", "replay"], "--spec-scheme: a scheme for draft tokens: add --draft N"),
    (["--weight-format", "fp3"], "--weight-format: one of bf16"),
    (["--gpu-memory", "80"], "--gpu-memory: a size with its unit"),
    (["--gpu-memory", "80GiB:a:b"], "--gpu-memory: SIZE or SIZE:NAME"),
    (["--rank-by", "speed"], "--rank-by: one of gpus, seqs-per-gpu, tokens-per-gpu"),
    (["--max-tpot", "0"], "--max-tpot: milliseconds, more than 0"),
    (["--gpu-memory", "80GiB", "--max-tpot", "20"], "--gpu-memory: a GPU with a known bandwidth"),
    (["--reserve", "200GiB", "--gpu", "h200"], "--reserve: less than the"),
    (["--tp", "128", "--pp", "1"], "--tp/--pp: a TP x PP of at most 64 GPUs"),
    # a custom card named as a catalogue GPU or as another custom card would stand in for it
    (["--gpu", "h200", "--gpu-memory", "96GiB:h200"], "--gpu-memory: a name no other planned GPU has, got 'h200'"),
    (["--gpu-memory", "96GiB:x", "--gpu-memory", "80GiB:X"], "--gpu-memory: a name no other planned GPU has, got 'X'"),
    (["--gpu", "h200,,h100"], "--gpu: GPU names separated by commas"),
])
def test_bad_fleet_input_is_one_line(args, needle, capsys):
    assert main(["plan", "nemotron-h-8b", "--context", "8192", *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_a_trtllm_replica_that_does_not_start_with_its_default_starts_with_the_solved_max_batch_size(capsys):
    """Nemotron-3-Nano at 128K on one H200: max_batch_size 2048's state slots do not fit (main's V2 manager: its
    quota is too small). The solved value is the largest that starts: with one more, fewer run or none. Under the V1
    manager the same search is hand-checkable: each request takes a slot and 128K tokens x 6144 B of the 76,906,320,422
    B budget after the padding slot, (76,906,320,422 - 49,082,368) // (49,082,368 + 6144 x 131072) = 89."""
    common = ["nemotron-3-nano-30b-a3b", "--gpu", "h200", "--engine", "trtllm"]
    assert main(["size", *common, "--max-seq-len", "131072"]) == 3
    assert "The V2 Mamba GPU cache quota is too small" in capsys.readouterr().err
    (c,) = plan_json(*common, "--tp", "1", "--pp", "1", "--context", "131072", "--kv-dtype", "default")["candidates"]
    solved = json.loads(c["settings"])["max_batch_size"]
    assert (c["fits"], c["sequences"], c["solved"], c["startup"]) == (True, solved, f"max_batch_size={solved}", "starts")
    again = size_json([*common, "--max-seq-len", "131072", "--max-batch", str(solved)])["engine"]
    assert again["max_running_requests"] == solved and again["stages"][0]["startup_error"] is None
    more = size_json([*common, "--max-seq-len", "131072", "--max-batch", str(solved + 1)])["engine"]
    assert more["stages"][0]["startup_error"] is not None or more["max_running_requests"] <= solved
    assert (76_906_320_422 - 49_082_368) // (49_082_368 + 6144 * 131072) == 89
    v1 = [*common, "--max-seq-len", "131072", "--kv-cache-manager", "v1"]
    assert size_json([*v1, "--max-batch", "89"])["engine"]["max_running_requests"] == 89
    assert size_json([*v1, "--max-batch", "90"])["engine"]["max_running_requests"] == 89  # the KV tokens bind


def test_a_vllm_replica_refused_for_cuda_graphs_starts_with_the_max_num_seqs_its_blocks_run(capsys):
    """Nemotron-H-8B on an L4: vLLM's default max_num_seqs (256) exceeds its 227 Mamba blocks. A request of 8,192
    tokens holds 26 of them (8 attention blocks of 1,040 tokens, 3 state blocks in each of 6 Mamba groups), so 227 //
    26 = 8 run ("Maximum concurrency ... 8.73x"): max_num_seqs 8 starts and runs them, and more runs no more. At vLLM
    0.33 (16-token blocks, 0.92 utilization)."""
    common = ["nemotron-h-8b", "--gpu", "l4", "--engine", "vllm", "--engine-version", "0.33.0"]
    assert main(["size", *common, "--max-seq-len", "8192"]) == 3
    assert "max_num_seqs (256) exceeds available Mamba cache blocks (227)" in capsys.readouterr().out
    (c,) = plan_json(*common, "--tp", "1", "--pp", "1", "--context", "8192", "--kv-dtype", "default")["candidates"]
    assert (c["fits"], c["solved"], c["solved_for"], c["sequences"]) == (True, "max_num_seqs=8", "start-up", 8)
    argv = shlex.split(c["settings"])
    assert argv[argv.index("--max-num-seqs") + 1] == "8"
    again = size_json([*common, "--max-seq-len", "8192", "--max-num-seqs", "8"])["engine"]
    assert again["max_running_requests"] == c["sequences"] and again["stages"][0]["startup_error"] is None
    stage = again["stages"][0]
    assert (stage["num_blocks"], stage["blocks_per_request"], 227 // 26) == (227, 26, 8)
    assert size_json([*common, "--max-seq-len", "8192", "--max-num-seqs", "227"])["engine"]["max_running_requests"] == 8
    table = runner.invoke(app, ["plan", *common, "--tp", "1", "--pp", "1", "--context", "8192", "--kv-dtype", "default"])
    assert "starts with max_num_seqs=8 (not with the engine's defaults)" in table.output


def test_won_t_start_only_when_no_value_does_and_says_why():
    (c,) = plan_json("qwen3.5-27b", "--gpu", "l4", "--engine", "vllm", "--tp", "1", "--pp", "1", "--context", "8192",
                     "--kv-dtype", "default")["candidates"]
    # 50.96 GiB of weights on a 22.49 GiB card: the load runs out of memory, whatever the settings
    assert (c["fits"], c["solved"]) == (False, "") and c["startup"].startswith("torch.OutOfMemoryError: CUDA out of memory")


def _ranks(name: str, tp: int = 1, pp: int = 1):
    from mcache.core.deployment import Deployment, size_deployment
    from mcache.core.sizing.layout import ParallelLayout

    return size_deployment(load_spec(name), Deployment(ParallelLayout(tp=tp, pp=pp))).neutral.estimate.ranks


H200_BANDWIDTH = 4_800_000_000_000  # NVIDIA H200 datasheet: 4.8 TB/s


@pytest.mark.parametrize(("name", "sequences", "context", "state_slot", "kv_token", "experts", "top_k", "n_experts"), [
    # Mamba2-2.7B: 64 layers of 80 heads x 64 x 128 bf16 SSM state (1,310,720 B) and a conv window of
    # (80 x 64 + 2 x 128) channels x 3 x 2 B (32,256 B); no KV, no MoE
    ("mamba2-2.7b", 100, 8192, 64 * (80 * 64 * 128 * 2 + (80 * 64 + 2 * 128) * 3 * 2), 0, 0, 0, 0),
    # Qwen3-Next: 36 GDN layers of 32 v-heads x 128 x 128 bf16 (1 MiB) and (2 x 16 x 128 + 32 x 128) x 3 x 2 B conv;
    # 12 attention layers of 2 KV heads x 256 x 2 (K, V) x 2 B; 48 MoE layers of 512 experts x 3 x 2048 x 512 x 2 B,
    # a step's 64 tokens touching 1 - (1 - 10/512)^64 of them
    ("qwen3-next-80b-a3b", 64, 32768, 36 * (32 * 128 * 128 * 2 + (2 * 16 * 128 + 32 * 128) * 3 * 2),
     12 * 2 * 256 * 2 * 2, 48 * 512 * 3 * 2048 * 512 * 2, 10, 512),
    # Kimi-Linear: 20 KDA layers of 32 heads x 128 x 128 float32 (2 MiB) and 3 convs of 32 x 128 x 3 x 2 B; 7 MLA
    # layers of (512 + 64) x 2 B a token; 26 MoE layers of 256 experts x 3 x 2304 x 1024 x 2 B, top 8
    ("kimi-linear-48b-a3b", 32, 131072, 20 * (32 * 128 * 128 * 4 + 3 * 32 * 128 * 3 * 2), 7 * (512 + 64) * 2,
     26 * 256 * 3 * 2304 * 1024 * 2, 8, 256),
])
def test_the_roofline_bytes_of_a_decode_step_by_hand(name, sequences, context, state_slot, kv_token, experts, top_k,
                                                     n_experts):
    from mcache.core.roofline import roofline, routed_expert_bytes

    (rank,) = _ranks(name)
    assert rank.state_bytes_per_slot == state_slot and rank.kv_bytes_per_token == kv_token
    assert routed_expert_bytes(rank) == experts
    share = 1 - (1 - top_k / n_experts) ** sequences if experts else 1
    weights = rank.weight_bytes - experts + int(experts * share)
    r = roofline([rank], None, sequences, context, 0, H200_BANDWIDTH)
    assert (r.weights_bytes, r.kv_bytes, r.state_bytes, r.draft_bytes) == (
        weights, sequences * kv_token * context, sequences * 2 * state_slot, 0)
    total = weights + sequences * (kv_token * context + 2 * state_slot)
    assert r.step_bytes == total and r.state_share == pytest.approx(sequences * 2 * state_slot / total)
    assert r.step_s == pytest.approx(total / H200_BANDWIDTH)
    assert r.tokens_per_s_per_gpu == pytest.approx(sequences * H200_BANDWIDTH / total)
    assert r.tpot_ms == pytest.approx(1000 * total / H200_BANDWIDTH)


def test_pipeline_stages_work_their_micro_batches_in_turn():
    """PP 2, 5 sequences: micro-batches of ceil(5 / 2) = 3, each stage reads its weights twice a step; the busiest
    stage sets the step; 5 tokens a step over 2 GPUs."""
    from mcache.core.roofline import roofline

    ranks = _ranks("mamba2-2.7b", pp=2)
    stages = [2 * (r.weight_bytes + 3 * 2 * r.state_bytes_per_slot) for r in ranks]
    r = roofline(ranks, None, 5, 8192, 0, H200_BANDWIDTH)
    assert r.step_bytes == max(stages)
    assert r.tokens_per_s_per_gpu == pytest.approx(5 / (max(stages) / H200_BANDWIDTH) / 2)


def test_max_tpot_caps_the_sequences_per_replica_and_replicas_make_up_the_target():
    common = ["nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--tp", "1", "--pp", "1", "--kv-dtype", "default"]
    free = plan_json(*common, "--target-concurrency", "1000")["candidates"][0]
    capped = plan_json(*common, "--target-concurrency", "1000", "--max-tpot", "6")["candidates"][0]
    per = capped["sequences_per_replica"]
    assert 0 < per < free["sequences_per_replica"] and capped["binding"] == "--max-tpot"
    assert capped["replicas"] == -(-1000 // per) and capped["roofline"]["tpot_ms"] <= 6
    from mcache.core.roofline import roofline

    (rank,) = _ranks("nemotron-h-8b")
    assert roofline([rank], None, per, 8192, 0, H200_BANDWIDTH).tpot_ms <= 6 < roofline(
        [rank], None, per + 1, 8192, 0, H200_BANDWIDTH).tpot_ms


def test_rank_by_tokens_per_gpu_orders_by_the_roofline():
    plan = plan_json("qwen3-next-80b-a3b", "--gpu", "h200,b200", "--context", "32768", "--rank-by", "tokens-per-gpu")
    reaching = [c for c in plan["candidates"] if c["fits"]]
    rates = [c["roofline"]["tokens_per_s_per_gpu"] for c in reaching]
    assert rates == sorted(rates, reverse=True) and plan["best"] == reaching[0]


def test_the_roofline_takes_a_bench_run_s_measured_bandwidth(tmp_path, capsys):
    """--bandwidth-from: the copy ceiling a `mcache bench` run measured on an H200 (4,271.6 GB/s, against the
    datasheet's 4.8 TB/s) is the roofline's bandwidth for the H200 candidates; the bound scales by their ratio."""
    results = HERE.parent / "results" / "nemotron-h-8b-replay-h200-2026-12-02.json"
    args = ["nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--tp", "1", "--pp", "1", "--kv-dtype", "default"]
    datasheet = plan_json(*args)["candidates"][0]["roofline"]
    measured = plan_json(*args, "--bandwidth-from", str(results))
    bound = measured["candidates"][0]["roofline"]
    ceiling = json.loads(results.read_text())["meta"]["ceiling"]["gbps"]
    assert bound["step_s"] == pytest.approx(datasheet["step_s"] * 4800 / ceiling, rel=1e-3)
    assert measured["notes"] == [f"roofline bandwidth of NVIDIA H200: {ceiling:,.0f} GB/s, the copy ceiling {results} "
                                 "measured (not the datasheet's)"]
    # a run of another GPU than the ones planned for, or of the CPU, is one line
    assert main(["plan", "nemotron-h-8b", "--gpu", "b200", "--bandwidth-from", str(results)]) == 2
    assert capsys.readouterr().err.strip() == ("mcache: --bandwidth-from: a results file of one of the GPUs planned "
                                               "for, got one of NVIDIA H200")
    cpu = json.loads(results.read_text())
    cpu["meta"] |= {"device": "cpu", "gpu": None, "ceiling": None}
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    assert main(["plan", "nemotron-h-8b", "--gpu", "h200", "--bandwidth-from", str(tmp_path / "cpu.json")]) == 2
    assert "a results file of a GPU run (its copy ceiling), got a cpu run" in capsys.readouterr().err
    # a ceiling no GPU's memory reaches (1e-300 divided by zero, 1e308 overflowed), or none recorded, is one line
    for gbps, shown in ((1e308, "1e+308"), (1e-300, "1e-300"), (0.001, "0.001")):
        odd = json.loads(results.read_text())
        odd["meta"]["ceiling"]["gbps"] = gbps
        (tmp_path / "odd.json").write_text(json.dumps(odd))
        assert main(["plan", "nemotron-h-8b", "--gpu", "h200", "--bandwidth-from", str(tmp_path / "odd.json")]) == 2
        assert capsys.readouterr().err.strip() == ("mcache: --bandwidth-from: a copy ceiling a GPU reaches (1 to 100,000 "
                                                   f"GB/s: meta.ceiling.gbps), got {shown} GB/s")
    odd["meta"]["ceiling"] = None
    (tmp_path / "odd.json").write_text(json.dumps(odd))
    assert main(["plan", "nemotron-h-8b", "--gpu", "h200", "--bandwidth-from", str(tmp_path / "odd.json")]) == 2
    assert "got a cuda run without one (meta.ceiling: null" in capsys.readouterr().err


def test_a_plot_path_that_cannot_be_written_is_refused_before_the_sweep(tmp_path, capsys):
    out = tmp_path / "plan.svg"
    args = ["plan", "nemotron-h-8b", "--gpu", "h200", "--tp", "1", "--pp", "1", "--context", "8192", "-o", str(out)]
    assert main([*args, "--plot", str(tmp_path / "missing" / "x.png")]) == 2
    assert capsys.readouterr().err.strip().endswith("x.png: --plot: a file in an existing folder")
    assert not out.exists()  # nothing written: the check comes before the sweep and -o
    assert main([*args, "--plot", str(tmp_path / "." / "plan.svg")]) == 2
    assert "--plot: a file other than -o's, which the plot would overwrite" in capsys.readouterr().err


def test_a_gpu_named_twice_is_planned_once():
    plan = plan_json("nemotron-h-8b", "--gpu", "h200,H200,NVIDIA H200", "--context", "8192", "--tp", "1", "--pp", "1",
                     "--kv-dtype", "default")
    assert [c["gpu"] for c in plan["candidates"]] == ["h200"]


def test_sequences_per_gpu_keep_their_digits():
    from mcache.cli.plan_output import _per_gpu

    assert (_per_gpu(14774581.0), _per_gpu(125 / 3), _per_gpu(123.5), _per_gpu(986.0)) == ("14774581", "41.67", "123.5", "986")
