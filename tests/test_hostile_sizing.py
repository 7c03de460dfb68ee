"""Hostile numbers in sizing input (issue 21, part A1): each reproducer becomes one line and exit 2, or a corrected
figure. Runs `size`, `plan`, `spec validate` and `import-hf` in-process through the error-mapping `main`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_util import one_line
from paths import HF_CONFIGS, TINY_SPEC

from mcache.cli.main import main
from mcache.core.load import load_spec
from mcache.core.sizing.estimate import estimate
from mcache.core.sizing.layout import ParallelLayout, RuntimeConfig, blocks_per_seq
from mcache.core.sizing.rank import resolve_dtypes

HUGE = "9" * 400  # 400 digits: past every float
LIMIT = "an integer from 1 to 2**40 (1099511627776)"
TINY = Path(TINY_SPEC).read_text()



def spec_file(tmp_path: Path, text: str, name: str = "bad.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def with_aux(shape: str) -> str:
    return TINY + f"aux_buffers:\n  - {{name: x, shape: [{shape}], dtype: float32, per: slot}}\n"


# 1. integers too long to parse --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["size"], ["spec", "validate"]])
def test_yaml_integer_of_5000_digits(command, tmp_path, capsys):
    path = spec_file(tmp_path, TINY.replace("hidden_size: 64", "hidden_size: " + "9" * 5000))
    line = one_line([*command, path], capsys)
    assert line == f"mcache: {path}:5: hidden_size: a number mcache can read, got an integer of 5000 digits"


@pytest.mark.parametrize("command", [["size"], ["spec", "validate"], ["import-hf"]])
def test_json_integer_of_5000_digits(command, tmp_path, capsys):
    text = (HF_CONFIGS / "bamba-9b.json").read_text()
    path = spec_file(tmp_path, re.sub(r'"hidden_size": \d+', '"hidden_size": ' + "9" * 5000, text), "config.json")
    line = one_line([*command, path], capsys)
    assert line == f"mcache: {path}: hidden_size: a number mcache can read, got an integer of 5000 digits"


# 2. long expressions, and validate evaluating what size evaluates ------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        pytest.param('"' + "+".join(["1"] * 1000) + '"', "an expression of at most 200 characters, got 1999", id="1000-terms"),
        pytest.param('"hidden_size * hidden_size * hidden_size * hidden_size * hidden_size * hidden_size * hidden_size"',
                     "a size from 1 to 1099511627776 (2**40), 'hidden_size * hidden_size * hidden_size * hidden_size * "
                     "hidden_size * hidden_size * hidden_size' gives 4398046511104", id="64**7"),
        pytest.param('"True"', "integers, names and + - * // only, got 'True'", id="boolean-name"),
        pytest.param('"tp - tp"', "a size from 1 to 1099511627776 (2**40), 'tp - tp' gives 0", id="zero"),
        pytest.param('"heads"', "known names (", id="unknown-name"),
    ],
)
def test_validate_refuses_what_size_refuses(shape, expected, tmp_path, capsys):
    path = spec_file(tmp_path, with_aux(shape))
    by_size = one_line(["size", path], capsys)
    assert by_size.startswith(f"mcache: {path}:15: aux_buffers[0].shape[0]: {expected}")
    assert one_line(["spec", "validate", path], capsys) == by_size


def test_buffer_of_more_than_2_to_40_elements(tmp_path, capsys):
    path = spec_file(tmp_path, with_aux("1099511627776, 2"))
    line = one_line(["spec", "validate", path], capsys)
    assert line == f"mcache: {path}:15: aux_buffers[0].shape: at most 1099511627776 (2**40) elements per slot, got 2199023255552"


def test_every_bundled_spec_and_config_validates(capsys):
    configs = sorted(str(p) for p in HF_CONFIGS.glob("*.json"))
    assert main(["spec", "validate", TINY_SPEC, "nemotron-h-8b", "qwen3-next-80b-a3b", *configs]) == 0


# 3. huge values ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--max-seq-len", "--context", "--kv-tokens", "--max-batch", "--tp", "--block-size"])
def test_400_digit_count(option, capsys):
    line = one_line(["size", "nemotron-h-8b", "--gpu", "h200", option, HUGE], capsys)
    assert line == f"mcache: {option}: {LIMIT}, got a number of 400 digits"


@pytest.mark.parametrize(("option", "top"), [("--draft", "256"), ("--snapshot-slots", "2**40 (1099511627776)"),
                                             ("--reserved-slots", "2**40 (1099511627776)")])
def test_400_digit_count_from_zero(option, top, capsys):
    line = one_line(["size", "nemotron-h-8b", option, HUGE, "--format", "markdown"], capsys)
    assert line == f"mcache: {option}: an integer from 0 to {top}, got a number of 400 digits"


@pytest.mark.parametrize("option", ["--gpu-memory", "--reserve", "--weights", "--kv-cache-memory"])
def test_400_digit_size(option, capsys):
    engine = ["--engine", "vllm"] if option == "--kv-cache-memory" else []
    line = one_line(["size", "qwen3.5-27b", "--gpu", "h200", *engine, option, HUGE + "GiB"], capsys)
    assert re.fullmatch(rf"mcache: {option}: a size from (0 B|1 GiB) to 1 PiB \(2\^50 B\), got '9{{20}}'\.\.\. \(403 characters\)",
                        line), line


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
@pytest.mark.parametrize(("option", "largest"), [("--max-batch", 2**40), ("--draft", 256), ("--snapshot-slots", 2**40),
                                                 ("--reserved-slots", 2**40), ("--max-seq-len", 2**40)])
def test_largest_allowed_value_renders_in_every_format(option, largest, fmt, capsys):
    code = main(["size", "qwen3-next-80b-a3b", "--gpu", "h200", option, str(largest), "--format", fmt])
    out, err = capsys.readouterr()
    assert code in (0, 3) and "Traceback" not in err and err.count("\n") <= 1
    if fmt == "json":
        json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))


def test_plan_bounds_its_sweep_before_building_it(capsys):
    contexts = ",".join(map(str, range(1, 5001)))  # 3 GPUs x 5000 contexts x 8 layouts x 2 KV dtypes
    assert one_line(["plan", "nemotron-h-8b", "--context", contexts], capsys) == (
        "mcache: --context: a sweep of at most 100,000 candidates (GPUs x contexts x layouts x KV dtypes x state "
        "dtypes x drafts x prefix settings), got 240,000: shorten this list of 5,000 values or another")


def test_plan_sizes_a_repeated_value_once(capsys):
    from mcache.cli.main import main

    assert main(["plan", "nemotron-h-8b", "--tp", "1,1,2,1", "--pp", "1", "--kv-dtype", "fp8,fp8", "--format", "json"]) == 0
    import json

    assert len(json.loads(capsys.readouterr().out)["candidates"]) == 3 * 3 * 2  # GPUs x contexts x TP 1, 2


def test_plan_bounds_its_lists(capsys):
    assert one_line(["plan", "nemotron-h-8b", "--context", f"8192,{HUGE}"], capsys) == (
        f"mcache: --context: {LIMIT}, got a number of 400 digits")
    assert one_line(["plan", "nemotron-h-8b", "--tp", "0"], capsys) == f"mcache: --tp: {LIMIT}, got 0"


def test_verify_refuses_host_lists_it_cannot_hold(capsys):
    line = one_line(["size", TINY_SPEC, "--verify", "--max-batch", "1099511627776"], capsys)
    assert line.startswith("mcache: --verify: at most 16777216 (2**24) slots and KV blocks per stage")


# 4. sizes need a unit; a GPU has at least 1 GiB ----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["0.5", "80", "80G", "-1GiB"])
def test_gpu_memory_without_a_unit(text, capsys):
    line = one_line(["size", "nemotron-h-8b", "--gpu-memory", text], capsys)
    assert line == ("mcache: --gpu-memory: a size with its unit, such as 141GiB or 80GB (GB = 10^9 B, GiB = 2^30 B; also B, "
                    f"KB, MB, TB, PB, KiB, MiB, TiB, PiB), got {text!r}")


@pytest.mark.parametrize("text", ["0", "0.5GiB", "1000MB"])
def test_gpu_memory_below_1_gib(text, capsys):
    line = one_line(["size", "nemotron-h-8b", "--gpu-memory", text], capsys)
    assert line == f"mcache: --gpu-memory: a size from 1 GiB to 1 PiB (2^50 B), got {text!r}"


def test_80gb_is_decimal_and_reserve_may_be_zero(capsys):
    assert main(["size", "nemotron-h-8b", "--gpu-memory", "80GB", "--reserve", "0", "--format", "json"]) == 0
    budget = json.loads(capsys.readouterr().out)["capacity"]
    assert budget["gpu_bytes"] == 80 * 10**9 and budget["reserve_bytes"] == 0


def test_help_says_what_units_mean(capsys):
    assert main(["size", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "GB = 10^9 B, GiB = 2^30 B" in text.replace("│ ", "")


# 5. integer arithmetic ---------------------------------------------------------------------------------------------


def test_kv_of_2_to_53_plus_1_tokens_is_exact():
    tokens = 2**53 + 1  # float(tokens) == 2**53
    assert blocks_per_seq(tokens, None, 1) == tokens
    spec = load_spec(TINY_SPEC)
    est = estimate(spec, ParallelLayout(), RuntimeConfig(max_batch=1, max_seq_len=tokens, tokens_per_block=1),
                   resolve_dtypes(spec))
    # one attention layer: K and V of 2 KV heads x 16 dims in float32 = 256 B a token
    assert est.ranks[0].kv_bytes_per_seq(tokens) == 256 * tokens


# 6. booleans are not integers --------------------------------------------------------------------------------------


def test_boolean_shape_entry(tmp_path, capsys):
    path = spec_file(tmp_path, with_aux("true"))
    assert one_line(["spec", "validate", path], capsys) == (
        f"mcache: {path}:15: aux_buffers[0].shape[0]: Expected `int | str`, got `bool`")


# 7. non-finite numbers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("literal", "field", "line"), [(".nan", "hidden_size", 5), ("-.inf", "notes", 3),
                                                         ("1.0e+400", "hidden_size", 5)])
def test_yaml_non_finite(literal, field, line, tmp_path, capsys):
    text = TINY.replace("hidden_size: 64", f"hidden_size: {literal}") if field == "hidden_size" else re.sub(
        r"notes: .*", f"notes: {literal}", TINY)
    path = spec_file(tmp_path, text)
    assert one_line(["size", path], capsys) == f"mcache: {path}:{line}: {field}: a finite number, got {literal}"


@pytest.mark.parametrize("literal", ["NaN", "-Infinity", "1e400"])
def test_json_non_finite(literal, tmp_path, capsys):
    """transformers reads NaN and infinities (NVIDIA's Nemotron-H configs hold `"time_step_limit": [0.0, Infinity]`):
    one in a field mcache does not size is accepted (issue 30); in a field it sizes, one line naming it."""
    config = (HF_CONFIGS / "bamba-9b.json").read_text()
    unused = spec_file(tmp_path, config.replace("{", '{"rope_theta": ' + literal + ", ", 1), "config.json")
    assert main(["import-hf", unused]) == 0
    capsys.readouterr()
    sized = json.loads(config)["hidden_size"]
    path = spec_file(tmp_path, config.replace(f'"hidden_size": {sized}', f'"hidden_size": {literal}'), "sized.json")
    assert one_line(["import-hf", path], capsys) == f"mcache: {path}: hidden_size: a finite number, got {literal}"


def test_nemotron_time_step_limit_infinity_sizes_as_without_it(tmp_path, capsys):
    config = (HF_CONFIGS / "nemotron-h-56b-base-8k.json").read_text()
    published = spec_file(tmp_path, config.replace("{", '{"time_step_limit": [0.0, Infinity], ', 1), "config.json")
    figures = []
    for path in (published, str(HF_CONFIGS / "nemotron-h-56b-base-8k.json")):
        assert main(["size", path, "--gpu", "h200", "--tp", "4", "--format", "json"]) == 0
        figures.append(json.loads(capsys.readouterr().out)["capacity"])
    assert figures[0] == figures[1] and figures[0]["ranks"][0]["max_sequences"] > 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--utilization", "nan"], "--utilization: a fraction in (0, 1], got nan"),
        (["--utilization", "inf"], "--utilization: a fraction in (0, 1], got inf"),
        (["--engine", "sglang", "--mem-fraction-static", "nan"], "--mem-fraction-static: a fraction in (0, 1], got nan"),
        (["--engine", "sglang", "--mamba-full-memory-ratio", "1e400"], "--mamba-full-memory-ratio: a number in (0, 1000], got inf"),
        (["--engine", "trtllm", "--free-gpu-memory-fraction", "-inf"], "--free-gpu-memory-fraction: a fraction in (0, 1], got -inf"),
    ],
)
def test_non_finite_option(args, expected, capsys):
    assert one_line(["size", "qwen3.5-27b", "--gpu", "h200", *args], capsys) == f"mcache: {expected}"


def test_pp_partition_bounded(capsys):
    line = one_line(["size", "nemotron-h-8b", "--pp", "2", "--pp-partition", f"1,{HUGE}"], capsys)
    assert line == f"mcache: --pp-partition: {LIMIT}, got a number of 400 digits"
