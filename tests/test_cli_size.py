"""`mcache size` and `mcache spec` through the CLI entry point (typer's runner and the error-mapping main)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest
from paths import TINY_SPEC
from typer.testing import CliRunner

from mcache.cli.main import app, main

runner = CliRunner()

QWEN_SLOT = 39_518_208  # 36 GDN layers x (8192*3*2 + 32*128*128*2), the reference's worked figure
QWEN_TOKEN = 24_576  # 12 attention layers x 2*2*256*2


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["size", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_size_json_has_the_reference_figures():
    report = run_json("qwen3-next-80b-a3b")
    assert report["schema_version"] == 2
    rank = report["ranks"][0]
    assert rank["state_bytes_per_slot"] == QWEN_SLOT
    assert rank["conv_bytes_per_slot"] == 36 * 8192 * 3 * 2
    assert rank["ssm_bytes_per_slot"] == 36 * 32 * 128 * 128 * 2
    assert rank["kv_bytes_per_token"] == QWEN_TOKEN
    assert rank["slots"] == 64 + 1  # max batch + one CUDA-graph padding slot
    kv = next(c for c in rank["components"] if c["component"] == "kv")
    assert kv["units"] == 64 * 8192 and kv["total_bytes"] == 64 * 8192 * QWEN_TOKEN
    assert all(isinstance(c["total_bytes"], int) for c in rank["components"])


def test_size_tp_and_dtype_override():
    report = run_json("qwen3-next-80b-a3b", "--tp", "4", "--ssm-dtype", "float32")
    rank = report["ranks"][0]
    assert rank["ssm_bytes_per_slot"] == 36 * 8 * 128 * 128 * 4
    assert rank["conv_bytes_per_slot"] == 36 * 2048 * 3 * 2
    assert rank["kv_bytes_per_token"] == 12 * 2 * 1 * 256 * 2  # 2 KV heads over tp 4: one replicated head
    assert report["dtypes"]["ssm"] == "float32"


def test_size_pp_reports_every_stage_and_the_tightest():
    report = run_json("qwen3-next-80b-a3b", "--pp", "2", "--pp-partition", "40,8", "--gpu", "h200", "--tp", "2")
    assert [r["layers"] for r in report["ranks"]] == [[0, 40], [40, 48]]
    assert [r["layer_counts"].get("gdn") for r in report["ranks"]] == [30, 6]
    cap = report["capacity"]
    assert cap["tightest_stage"] == 0
    assert cap["ranks"][0]["max_sequences"] <= cap["ranks"][1]["max_sequences"]


def test_size_capacity_hand_computed():
    # nemotron-h-8b-like numbers are checked in test_capacity; here: a GPU given by memory size.
    report = run_json("qwen3-next-80b-a3b", "--tp", "4", "--gpu-memory", "80GiB", "--reserve", "0", "--utilization", "1")
    cap = report["capacity"]["ranks"][0]
    rank = report["ranks"][0]
    assert report["capacity"]["gpu_bytes"] == 80 << 30
    assert cap["cache_budget_bytes"] == (80 << 30) - rank["weight_bytes"]
    assert cap["kv_budget_bytes"] == cap["cache_budget_bytes"] - (rank["cache_bytes"] - rank["component_bytes"]["kv"])


def test_markdown_and_csv_formats():
    md = runner.invoke(app, ["size", "nemotron-h-8b", "--format", "markdown", "--gpu", "h100"])
    assert md.exit_code == 0 and "| stage | component |" in md.output and "Capacity per rank" in md.output
    out = runner.invoke(app, ["size", "nemotron-h-8b", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(out.output)))
    assert {r["component"] for r in rows} >= {"kv", "conv", "ssm"}
    assert all(r["total"].isdigit() for r in rows)  # csv keeps raw integers


def test_table_output_is_not_truncated_when_piped():
    result = runner.invoke(app, ["size", "nemotron-h-56b", "--gpu", "h200", "--tp", "8"])
    assert result.exit_code == 0
    assert "…" not in result.output


def test_output_file_is_written(tmp_path):
    target = tmp_path / "size.json"
    result = runner.invoke(app, ["size", "lfm2-1.2b", "--format", "json", "-o", str(target)])
    assert result.exit_code == 0 and result.output == ""
    assert json.loads(target.read_text())["model"]["name"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["size", "no-such-model"], "no-such-model: file: an existing file or a bundled spec name"),
        (["size", "qwen3-next-80b-a3b", "--tp", "3"], "attention.num_kv_heads: 2 cannot be split over tp=3"),
        (["size", "nemotron-h-8b", "--pp", "2", "--pp-partition", "1,2"], "--pp-partition: 2 positive counts summing to 52"),
        (["size", "nemotron-h-8b", "--draft", "2", "--spec-scheme", "none"], "--spec-scheme:"),
        (["size", "nemotron-h-8b", "--gpu", "tpu"], "--gpu: one of h100-80gb"),
        (["size", "nemotron-h-8b", "--gpu-memory", "lots"], "--gpu-memory: a size with its unit, such as 141GiB"),
        (["size", "nemotron-h-8b", "--ssm-dtype", "fp8"], "--ssm-dtype: one of float32, bfloat16, float16"),
        (["size", "nemotron-h-8b", "--tp", "x"], "Invalid value for '--tp'"),
        (["size", "nemotron-h-8b", "--max-batch", "0"], "--max-batch: an integer from 1 to 2**40"),
        (["size", "nemotron-h-8b", "--gpu", "h200", "--utilization", "1.5"], "--utilization: a fraction in (0, 1], got 1.5"),
        (["size", "nemotron-h-8b", "--weight-format", "fp3"],
         "--weight-format: one of bf16, bfloat16, fp16, float16, nvfp4, mxfp4, fp8, fp8_block, int4, int8, nf4, got 'fp3'"),
        (["size", "nemotron-h-8b", "--engine", "vllm", "--gpu", "h200", "--weight-format", "FP8"], "--weight-format: one of"),
        (["spec", "validate", "nowhere.yaml"], "nowhere.yaml: file:"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_spec_field_error_names_file_and_line(tmp_path, capsys):
    spec = tmp_path / "m.yaml"
    spec.write_text(
        "name: m\nsource: test\nhidden_size: 64\nvocab_size: 10\nnum_layers: 1\n"
        "layers: {types: [mamba2]}\nmamba2:\n  num_heads: 6\n  head_dim: 4\n  state_size: 8\n"
    )
    assert main(["size", str(spec), "--tp", "4"]) == 2
    assert f"{spec}:8: mamba2.num_heads: 6 heads cannot be split evenly over tp=4" in capsys.readouterr().err


def test_spec_list_validate_schema(capsys):
    assert main(["spec", "list"]) == 0
    listed = capsys.readouterr().out
    assert "nemotron-h-8b" in listed and "huggingface.co" in listed
    assert main(["spec", "validate", "nemotron-h-8b", "qwen3-next-80b-a3b"]) == 0
    assert capsys.readouterr().out.count("ok ") == 2
    assert main(["spec", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "ModelSpec" in json.dumps(schema) and "mamba2" in json.dumps(schema)


@pytest.mark.parametrize("argv", [
    ["size", "nemotron-h-8b", "--gpu", "h200", "--format", "json"],
    ["size", "nemotron-h-8b", "--transfer-to-tp", "2", "--format", "json"],
    ["plan", "nemotron-h-8b", "--gpu", "h200", "--context", "8192", "--format", "json"],  # no --plot: no matplotlib
])
def test_sizing_commands_do_not_import_torch(argv):
    code = (
        f"import sys; from mcache.cli.main import main; rc = main({argv!r}); "
        "assert rc == 0; bad = [m for m in ('torch', 'triton', 'pynvml', 'numpy', 'matplotlib') if m in sys.modules]; "
        "assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_dtype_sources_are_reported():
    report = run_json("kimi-linear-48b-a3b", "--kv-dtype", "fp8")
    assert report["dtypes"]["kv"] == "float8_e4m3fn"
    assert report["dtype_sources"] == {"kv": "--kv-dtype", "conv": "model dtype",
                                       "ssm": "float32, KDA's default"}
    assert run_json("nemotron-h-8b")["dtype_sources"]["ssm"] == "model dtype"  # the config has no hint
    assert run_json("nemotron-3-nano-30b-a3b")["dtype_sources"]["ssm"] == "config mamba_ssm_cache_dtype"
    assert run_json("nemotron-3-nano-30b-a3b", "--ssm-dtype", "bf16")["dtype_sources"]["ssm"] == "--ssm-dtype"


def test_verify_reports_zero_difference(capsys):
    assert main(["size", "qwen3-next-80b-a3b", "--verify", "--draft", "2", "--spec-scheme", "replay",
                 "--snapshot-slots", "2", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["differences"] == 0 and out["device"] == "meta"
    assert {r["buffer"] for r in out["rows"]} >= {"gdn.ssm", "gdn.ring_k", "replay_buf_idx", "gdn.snap_ssm"}
    assert all(r["estimated"] == r["allocated"] > 0 for r in out["rows"])


def test_verify_checks_the_pool_size_sized(capsys):
    """`--verify` builds the pool the same command sizes: here the one memory holds on an H200, not a default."""
    assert main(["size", TINY_SPEC, "--gpu", "h200", "--format", "json"]) == 0
    sized = json.loads(capsys.readouterr().out)
    assert main(["size", TINY_SPEC, "--gpu", "h200", "--verify", "--format", "json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["differences"] == 0
    assert sum(r["estimated"] for r in checked["rows"]) == sum(r["cache_bytes"] for r in sized["ranks"])
    assert sized["ranks"][0]["slots"] == 63383


def test_verify_shrinks_a_pool_sized_by_memory_past_the_host_limit(monkeypatch, capsys):
    import mcache.cli.verify as verify

    monkeypatch.setattr(verify, "MAX_IDS", 5000)
    assert main(["size", TINY_SPEC, "--gpu", "h200", "--verify", "--format", "json"]) == 0
    captured = capsys.readouterr()
    note = captured.err.strip()
    assert note.startswith("mcache: --verify: the sized pool (max batch 63382) exceeds the manager's host limit of 5000")
    batch = int(note.rsplit("max batch ", 1)[1])
    assert 0 < batch < 63382 and json.loads(captured.out)["differences"] == 0
    monkeypatch.setattr(verify, "MAX_IDS", 5)  # not even one request: the one-line error
    assert main(["size", TINY_SPEC, "--gpu", "h200", "--verify"]) == 2
    assert capsys.readouterr().err.startswith("mcache: --verify: at most 5 (2**24) slots")


def test_verify_exits_1_on_a_difference(monkeypatch, capsys):
    import mcache.cache.manager as manager

    real = manager.verify

    def off_by_one(est, device="meta", pool_layout="layer"):
        rows = real(est, device, pool_layout)
        first = rows[0]
        return [manager.VerifyRow(first.stage, first.tp_rank, first.key, first.component, first.estimated,
                                  first.allocated + 1), *rows[1:]]

    monkeypatch.setattr(manager, "verify", off_by_one)
    assert main(["size", "nemotron-h-8b", "--verify", "--format", "markdown"]) == 1
    assert "1 differ" in capsys.readouterr().out


def test_tightest_stage_without_a_gpu():
    # 40 layers (30 GDN, 10 attention) on stage 0 against 8 (6 GDN, 2 attention) on stage 1
    report = run_json("qwen3-next-80b-a3b", "--pp", "2", "--pp-partition", "40,8")
    assert report["capacity"] is None and report["tightest_stage"] == 0
    bytes_of = [r["weight_bytes"] + r["cache_bytes"] for r in report["ranks"]]
    assert bytes_of[0] > bytes_of[1]


def test_bare_group_prints_help_without_an_error_line(capsys):
    assert main([]) == 2
    captured = capsys.readouterr()
    assert "Usage: mcache" in captured.out + captured.err and "mcache: \n" not in captured.err


def test_unknown_weights_size_the_cache_and_ask_for_weights(tmp_path, capsys):
    """A config without vocab_size (and no class default): the table, weights unknown, no capacity unless
    --weights gives them; an engine needs them too."""
    from paths import HF_CONFIGS

    data = json.loads((HF_CONFIGS / "minimax-text-01.json").read_text())
    data.update(model_type="minimax_text_01", attn_type_list=[1 if t == "full_attention" else 0 for t in data.pop("layer_types")])
    del data["vocab_size"]
    config = tmp_path / "config.json"
    config.write_text(json.dumps(data))
    assert main(["size", str(config), "--gpu", "h200", "--tp", "8"]) == 0
    out = capsys.readouterr().out
    assert "(weights unknown: vocab_size)" in out and "weights unknown\n" in out.replace(" · tightest", "")
    assert "no capacity section: the weights are unknown (the spec leaves vocab_size null)" in out
    report = run_json(str(config), "--gpu", "h200", "--tp", "8")
    assert report["model"]["param_count"] is None and report["model"]["weights_unknown"] == ["vocab_size"]
    assert report["capacity"] is None and report["ranks"][0]["weight_bytes"] is None
    given = run_json(str(config), "--gpu", "h200", "--tp", "8", "--weights", "60GiB")
    cap = given["capacity"]
    assert cap["weights_given"] and cap["ranks"][0]["weight_bytes"] == 60 << 30
    assert main(["size", str(config), "--gpu", "h200", "--tp", "8", "--engine", "vllm"]) == 2
    err = capsys.readouterr().err
    assert "--weights: a size: the spec leaves vocab_size null" in err and err.count("\n") == 1
    # vLLM 0.33 no longer implements MiniMax-Text-01 (registry.py _PREVIOUSLY_SUPPORTED_MODELS): with the weights
    # given, it is a start-up refusal (does not fit, exit 3)
    assert main(["size", str(config), "--gpu", "h200", "--tp", "8", "--engine", "vllm", "--weights", "60GiB"]) == 3
    assert "Transformers attention interface" in capsys.readouterr().err


def test_given_weights_replace_the_estimate_in_the_neutral_model():
    estimated = run_json("nemotron-h-8b", "--gpu", "h200")["capacity"]["ranks"][0]
    given = run_json("nemotron-h-8b", "--gpu", "h200", "--weights", "40GiB")["capacity"]["ranks"][0]
    assert given["weight_bytes"] == 40 << 30
    assert given["cache_budget_bytes"] == estimated["cache_budget_bytes"] + estimated["weight_bytes"] - (40 << 30)


# one layer of attention (q and o 64x64, k and v 64x32: 12,288) and a gated MLP (3 x 64x96: 18,432), their two norms
# and the final one (3 x 64), the embedding and the untied head (2 x 128x64): 47,296 parameters, 30,720 of them linear
SMALL = """name: small
source: hand-made
dtype: bfloat16
hidden_size: 64
vocab_size: 128
num_layers: 1
layers: {types: [attention+mlp]}
attention: {num_heads: 4, num_kv_heads: 2, head_dim: 16}
mlp: {intermediate_size: 96}
"""


@pytest.mark.parametrize(("fmt", "stored", "shown"), [
    (None, 2 * 47_296, "bfloat16"),  # 94,592
    ("bf16", 2 * 47_296, "bfloat16"),
    ("fp16", 2 * 47_296, "float16"),
    ("fp8", 30_720 + 2 * (47_296 - 30_720), "fp8"),  # the linear layers at a byte, the head and the rest at two: 63,872
    ("nvfp4", 30_720 * 9 // 16 + 2 * (47_296 - 30_720), "nvfp4"),  # half a byte and an fp8 scale per 16: 50,432
])
def test_a_weight_format_weighs_the_linear_layers_but_the_head_as_stored(tmp_path, fmt, stored, shown):
    spec = tmp_path / "small.yaml"
    spec.write_text(SMALL)
    given = ["--weight-format", fmt] if fmt else []
    report = run_json(str(spec), *given)
    assert report["model"]["weight_format"] == shown
    assert report["model"]["param_count"] == 47_296
    assert report["model"]["param_bytes"] == report["ranks"][0]["weight_bytes"] == stored
    engine = run_json(str(spec), "--engine", "vllm", "--gpu", "h200", *given)["engine"]
    assert engine["settings"]["weights_bytes"] == stored  # the engine's weights are the same estimate


def test_the_engines_beside_the_neutral_figure_weigh_the_weights_as_given():
    """The line of each engine's run beside the neutral figure is the run `--engine` gives, weights weighed alike."""
    common = ("qwen3-next-80b-a3b", "--gpu", "h200", "--tp", "2")
    beside = {e["name"]: e["max_running_requests"] for e in run_json(*common, "--weight-format", "fp8")["capacity"]["engines"]}
    bf16 = {e["name"]: e["max_running_requests"] for e in run_json(*common)["capacity"]["engines"]}
    vllm = run_json(*common, "--weight-format", "fp8", "--engine", "vllm", "--context", "8192")["engine"]
    assert beside["vllm"] == vllm["max_running_requests"] > bf16["vllm"]
    assert all(beside[name] > bf16[name] for name in bf16)


def test_the_weight_format_help_names_every_format_the_core_takes():
    """The shared option's help is written out (no command loads the core to build it): it names each format."""
    import typing

    from mcache.cli.options import WeightFormatOption
    from mcache.core.sizing.weights import QUANT_FORMATS

    help_text = typing.get_args(WeightFormatOption)[1].help
    assert all(name in help_text for name in ("bf16", "fp16", *QUANT_FORMATS))
