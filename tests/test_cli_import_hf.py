"""`mcache import-hf` (and `mcache size` on an HF config) through typer's runner and the error-mapping main."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths import HF_CONFIGS
from typer.testing import CliRunner

from mcache.cli.main import app, main
from mcache.core.hf import import_hf
from mcache.core.load import load_spec, parse_spec

runner = CliRunner()


def config(stem: str) -> Path:
    return HF_CONFIGS / f"{stem}.json"


def test_import_to_stdout_loads_back_equal():
    result = runner.invoke(app, ["import-hf", str(config("nvidia-nemotron-3-nano-30b-a3b"))])
    assert result.exit_code == 0, result.output
    spec = parse_spec(result.output, "stdout")
    assert spec == import_hf(config("nvidia-nemotron-3-nano-30b-a3b"))
    assert "(model_type nemotron_h)" in spec.source
    assert spec.ssm_dtype_hints == {"mamba_ssm_cache_dtype": "float32"} and spec.ssm_dtype is None  # only what the config says
    assert "mamba_ssm_cache_dtype is float32" in spec.notes


def test_output_file_loads_back_and_sizes_the_same(tmp_path):
    target = tmp_path / "qwen.yaml"
    result = runner.invoke(app, ["import-hf", str(config("qwen3.5-27b")), "-o", str(target)])
    assert result.exit_code == 0 and result.output == ""
    assert load_spec(str(target)) == import_hf(config("qwen3.5-27b"))
    from_yaml = runner.invoke(app, ["size", str(target), "--format", "json", "--tp", "2"])
    from_config = runner.invoke(app, ["size", str(config("qwen3.5-27b")), "--format", "json", "--tp", "2"])
    assert from_yaml.exit_code == from_config.exit_code == 0
    assert json.loads(from_yaml.output)["ranks"] == json.loads(from_config.output)["ranks"]


def test_checkpoint_directory(tmp_path):
    folder = tmp_path / "Jamba-v0.1"
    folder.mkdir()
    (folder / "config.json").write_text(config("jamba-v0.1").read_text())
    result = runner.invoke(app, ["import-hf", str(folder)])
    assert result.exit_code == 0, result.output
    assert parse_spec(result.output, "stdout").name == "Jamba-v0.1"
    sized = runner.invoke(app, ["size", str(folder), "--format", "json"])
    assert sized.exit_code == 0, sized.output
    report = json.loads(sized.output)
    assert report["ranks"][0]["kv_bytes_per_token"] == 4 * 2 * 8 * 128 * 2  # 4 attention layers of 32
    assert report["model"]["param_count"] > 0


def test_size_on_a_config_matches_the_bundled_spec():
    a = runner.invoke(app, ["size", str(config("nemotron-h-8b-base-8k")), "--format", "json", "--tp", "4"])
    b = runner.invoke(app, ["size", "nemotron-h-8b", "--format", "json", "--tp", "4"])
    assert a.exit_code == b.exit_code == 0
    ra, rb = json.loads(a.output)["ranks"][0], json.loads(b.output)["ranks"][0]
    for key in ("kv_bytes_per_token", "conv_bytes_per_slot", "ssm_bytes_per_slot", "weight_bytes"):
        assert ra[key] == rb[key], key


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ('{"model_type": "nemotron_h", ', "json"),
        ('{"model_type": "llama", "hidden_size": 8}', "model_type"),
        ('{"model_type": "minimax_text_01", "hidden_size": 8}', "num_hidden_layers"),
        ('{"model_type": "lfm2", "num_hidden_layers": 2, "hidden_size": 8, "vocab_size": 9, '
         '"layer_types": ["conv"]}', "layer_types"),
    ],
)
def test_broken_config_is_one_line_and_exit_2(tmp_path, capsys, content, field):
    path = tmp_path / "config.json"
    path.write_text(content)
    assert main(["import-hf", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith(f"mcache: {path}") and f": {field}: " in captured.err
    if field == "model_type":
        assert "mcache spec schema" in captured.err and len(captured.err) < 240  # a hint, not a list of 17 types


def test_missing_path_and_unwritable_output(tmp_path, capsys):
    assert main(["import-hf", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: file:" in capsys.readouterr().err
    target = tmp_path / "no-such-dir" / "spec.yaml"
    assert main(["import-hf", str(config("lfm2-1.2b")), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{target}: cannot write: the folder {target.parent} does not exist" in err
    assert not target.parent.exists()


def test_size_on_a_broken_config_is_one_line(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "minimax_text_01", "num_hidden_layers": 4}')
    assert main(["size", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: hidden_size:" in err


def test_cli_start_up_does_not_load_the_importer():
    code = (
        "import sys; import mcache.cli.main; "
        "bad = [m for m in ('mcache.core.hf', 'mcache.core.spec.dump') if m in sys.modules]; "
        "assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_config_without_a_dtype_says_which_was_assumed(tmp_path):
    """Issue 30: with no dtype or torch_dtype the weights are weighed as bfloat16 (transformers would build float32,
    engines load what the checkpoint stores): the report's notes say so, and the bytes are 2 per parameter."""
    data = json.loads(config("mamba2-2.7b").read_text())
    data.pop("torch_dtype", None), data.pop("dtype", None)
    (tmp_path / "config.json").write_text(json.dumps(data))
    sized = runner.invoke(app, ["size", str(tmp_path), "--format", "json"])
    assert sized.exit_code == 0, sized.output
    model = json.loads(sized.output)["model"]
    assert "Weights weighed as bfloat16, assumed: the config names no dtype or torch_dtype" in model["notes"]
    assert model["weight_format"] == "bfloat16" and model["param_bytes"] == 2 * model["param_count"]
    given = import_hf(config("mamba2-2.7b"))
    assert "assumed" not in given.notes
