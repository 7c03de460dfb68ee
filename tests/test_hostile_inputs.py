"""Hostile input that used to hang or trace back (issue 29): aliases that recurse or expand without bound, regular
expressions that backtrack without bound, quantization values out of range, oversized documents and a transfer plan
of 8 x 52 ranks. Each reproducer is one line and exit 2 (or its answer) well inside the time a hang would take; a
property test per class draws random inputs of the same shape."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_util import one_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import HF_CONFIGS, TINY_SPEC

from mcache.cli.main import main
from mcache.core.errors import SpecError
from mcache.core.files import MAX_DOCUMENT_BYTES
from mcache.core.hf.patterns import MAX_PATTERNS, quiet, unsafe_reason
from mcache.core.load import MAX_NODES, expanded_size, parse_spec

QWEN3_NEXT = HF_CONFIGS / "qwen3-next-80b-a3b.json"
CT = {"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}



def quantized(tmp_path: Path, qc: dict, name: str = "config.json") -> str:
    config = json.loads(QWEN3_NEXT.read_text())
    config["quantization_config"] = qc
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return str(path)


def laughs(levels: int, width: int = 10) -> str:
    lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# --- YAML aliases ---------------------------------------------------------------------------------------------


def test_a_recursive_alias_is_one_line(tmp_path, capsys):
    path = tmp_path / "r.yaml"
    path.write_text("a: &r [*r]\n")
    line = one_line(["spec", "validate", str(path)], capsys)
    assert line == f"mcache: {path}: yaml: a document without recursive aliases (an alias refers to a node it is in)"


def test_a_billion_laughs_is_refused_before_it_is_built(tmp_path, capsys):
    path = tmp_path / "laughs.yaml"
    path.write_text(laughs(9))  # 468 bytes, 10**9 values once expanded
    start = time.perf_counter()
    line = one_line(["size", str(path)], capsys)
    assert time.perf_counter() - start < 5
    assert line == f"mcache: {path}: yaml: a document of at most 100,000 values once its aliases are expanded"


def test_aliases_within_the_bound_still_load():
    text = Path(TINY_SPEC).read_text().replace("hidden_size: 64", "hidden_size: &h 64").replace("vocab_size: 128",
                                                                                               "vocab_size: *h")
    assert parse_spec(text, "t.yaml").vocab_size == 64
    # laughs(4): the mapping, its 4 keys and lists of 11, 111, 1111 and 11111 values
    assert expanded_size(yaml.compose(laughs(4))) == 1 + 4 + 11 + 111 + 1111 + 11111 < MAX_NODES


def test_expanded_size_by_hand():
    # mapping(2 keys): 1 + key a + seq(1 + 3 scalars) + key b + alias of that seq (counted again, 4) = 11
    node = yaml.compose("a: &s [1, 2, 3]\nb: *s\n")
    assert expanded_size(node) == 1 + 1 + 4 + 1 + 4


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 7), max_size=12)), min_size=1, max_size=8),
       st.booleans())
def test_random_alias_documents_load_or_are_refused_quickly(levels, self_ref):
    """Anchors whose lists repeat earlier anchors (any width and depth), sometimes one referring to itself: a
    spec error or a document, each in well under a second."""
    lines = []
    for i, (_, refs) in enumerate(levels):
        items = [f"*a{r % i}" if i else "x" for r in refs] + ([f"*a{i}"] if self_ref and i == len(levels) - 1 else [])
        lines.append(f"a{i}: &a{i} [{', '.join(items) or 'x'}]")
    text = "\n".join(lines) + "\n"
    start = time.perf_counter()
    with pytest.raises(SpecError):  # never a spec: no model fields; refused for aliases or for the fields
        parse_spec(text, "r.yaml")
    assert time.perf_counter() - start < 2


# --- regular expressions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern, why", [("(.*.*)*X$", "a repetition inside a repetition"),
                                          ("(a|a)*$", "an alternation inside a repetition"),
                                          (r"(a)\1", "a backreference"),
                                          (".*.*.*.*X", "4 repetitions"),
                                          ("a" * 513, "513 characters")])
def test_unsafe_patterns_name_why(pattern, why):
    assert unsafe_reason(pattern) == why


@pytest.mark.parametrize("pattern", [r".*mlp\.gate$", r"model\.layers\.\d+\.mlp\..*", r".*layers\.\d+\.self_attn.*",
                                     "lm_head", r"(?:mtp|lm_head)\..*", "x{0,1}y?"])
def test_patterns_real_configs_use_are_safe(pattern):
    assert unsafe_reason(pattern) is None


def test_a_backtracking_ignore_pattern_is_one_line(tmp_path, capsys):
    path = quantized(tmp_path, {**CT, "ignore": ["lm_head", "re:(.*.*)*X$"]})
    line = one_line(["size", path, "--gpu", "h200"], capsys)
    assert line.startswith(f"mcache: {path}: quantization_config.ignore: a regular expression of at most 512 characters")
    assert line.endswith("got '(.*.*)*X$' (a repetition inside a repetition)")


def test_a_backtracking_gptq_dynamic_key_is_one_line(tmp_path, capsys):
    path = quantized(tmp_path, {"quant_method": "gptq", "bits": 4, "group_size": 128, "dynamic": {"-:(a|a)*$": {}}})
    for command in (["size", path], ["import-hf", path], ["plan", path, "--gpu", "h200"]):
        line = one_line(command, capsys)
        assert "quantization_config.dynamic: a regular expression" in line and "(an alternation inside" in line


def test_an_invalid_gptq_dynamic_key_is_one_line(tmp_path, capsys):
    path = quantized(tmp_path, {"quant_method": "gptq", "bits": 4, "dynamic": {"-:(unclosed": {}}})
    assert one_line(["size", path], capsys) == (f"mcache: {path}: quantization_config.dynamic: keys whose pattern after "
                                                "'-:' is a valid regular expression, got '(unclosed' (missing ), "
                                                "unterminated subpattern)")


def test_too_many_patterns_are_refused(tmp_path, capsys):
    path = quantized(tmp_path, {**CT, "ignore": [f"re:.*layer{i}$" for i in range(MAX_PATTERNS + 1)]})
    assert one_line(["size", path], capsys).endswith(f"at most {MAX_PATTERNS} regular expressions, got {MAX_PATTERNS + 1}")


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="a.*+?|()[]\\d{}1,$^x", max_size=24))
def test_random_patterns_are_refused_or_run_quickly(pattern):
    """Any pattern mcache agrees to run matches every module name of a 128-layer model well inside a second."""
    if unsafe_reason(pattern) is not None:
        return
    try:
        with quiet():  # "possible nested set": a drawn pattern's warning
            regex = re.compile(f"^(?:{pattern})", re.MULTILINE)
    except (re.error, OverflowError, RecursionError):
        return
    names = "\n".join(f"model.layers.{i}.{leaf}" for i in range(128)
                      for leaf in ("mixer.in_proj", "self_attn.q_proj", "mlp.experts.0.up_proj", "mlp.shared_expert.down_proj"))
    start = time.perf_counter()
    regex.search(names + "\n" + "a" * 60)
    assert time.perf_counter() - start < 1


# --- numbers out of range ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("qc, field, expected", [
    ({"quant_method": "gptq", "bits": 4, "group_size": -5}, "quantization_config.group_size", "Expected `int` >= -1"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 2**70}, "quantization_config.group_size",
     "Expected `int` <= 1099511627776"),
    ({"quant_method": "awq", "w_bit": 2**41}, "quantization_config.w_bit", "Expected `int` <= 64"),
    ({**CT, "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": -5}}}},
     "quantization_config.config_groups[...].weights.group_size", "Expected `int` >= -1"),
])
def test_quantization_values_out_of_range_are_one_line(tmp_path, capsys, qc, field, expected):
    path = quantized(tmp_path, qc)
    assert one_line(["size", path], capsys) == f"mcache: {path}: {field}: {expected}"


# --- sizes of inputs and of work ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["big.json", "big.yaml"])
def test_a_document_over_the_limit_is_refused_unread(tmp_path, capsys, name):
    path = tmp_path / name
    with open(path, "wb") as f:
        f.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: the test writes nothing
    line = one_line(["size", str(path)], capsys)
    assert line == (f"mcache: {path}: file: a file of at most {MAX_DOCUMENT_BYTES >> 20} MiB (mcache reads documents "
                    "whole; this one is larger)")


def test_a_transfer_plan_of_8_by_52_ranks_is_quick(tmp_path):
    out = tmp_path / "plan.json"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mcache.cli.main", "size", "nemotron-h-8b", "--tp", "8", "--pp", "52",
                    "--transfer-to-tp", "8", "--transfer-to-pp", "52", "--format", "json", "-o", str(out)],
                   check=True, timeout=60)
    assert time.perf_counter() - start < 30  # minutes before this plan was computed per pair of stages
    plan = json.loads(out.read_text())["transfer"]
    assert plan["pairs"] and all(p["sender"] == p["receiver"] for p in plan["pairs"])  # same layout: each rank to itself


# --- budgets, contexts and engine options that meant nonsense ----------------------------------------------------


@pytest.mark.parametrize("args, expected", [
    (["--engine", "vllm", "--kv-cache-memory", "1000TiB"], "--kv-cache-memory: at most the GPU's 140.4 GiB, got 1024000.0 GiB"),
    (["--engine", "sglang", "--free-memory-before-load", "1000TiB"],
     "--free-memory-before-load: at most the GPU's 140.4 GiB, got 1024000.0 GiB"),
    (["--reserve", "200GiB"], "--reserve: less than the 126.36 GiB the engine may use (0.9 of 140.40 GiB), got 200.00 GiB"),
    (["--engine", "vllm", "--gdn-prefill-backend", "bogus"],
     "--gdn-prefill-backend: one of flashinfer, triton (the backends mcache models), got 'bogus'"),
    (["--context", "100000", "--max-seq-len", "8192"],
     "--context: at most the max sequence length the KV pool is sized for (8,192 tokens), got 100,000"),
    (["--engine", "vllm", "--context", "100000"],
     "--context: at most the max model length the engine runs (8,192 tokens; it refuses longer requests), got 100,000"),
    (["--engine", "sglang", "--context", "8193"],
     "--context: at most the max model length the engine runs (8,192 tokens; it refuses longer requests), got 8,193"),
    (["--engine", "trtllm", "--context", "8193"],
     "--context: at most the max model length the engine runs (8,192 tokens; it refuses longer requests), got 8,193"),
])
def test_settings_beyond_the_gpu_or_the_sized_length_are_refused(capsys, args, expected):
    model = "qwen3-next-80b-a3b" if "--gdn-prefill-backend" in args else "nemotron-h-8b"
    assert one_line(["size", model, "--gpu", "h200", *args], capsys) == f"mcache: {expected}"


@pytest.mark.parametrize("layout", [["--pp", "2", "--pp-partition", "51,1"], ["--pp", "52"]])
def test_a_vllm_stage_without_cache_layers_is_a_start_up_refusal(capsys, layout):
    """A PP stage holding only MLP layers (Nemotron-H-8B's last, layer 51; at PP 52 most stages): vLLM 0.33's
    kv_cache_planning.py refuses the layout of its empty KV-cache groups, a division by zero in mcache before."""
    line = one_line(["size", "nemotron-h-8b", "--gpu", "h200", "--engine", "vllm", *layout], capsys, code=3)
    assert "under vLLM: ValueError: KV cache layout LBNHC cannot express this model's mixed page sizes ([])" in line


def test_in_vllm_0_10_2_a_stage_without_cache_layers_leaves_every_worker_one_block(capsys):
    """v1/core/kv_cache_utils.py (v0.10.2): a worker with no cache layer has one block (the null block) and every
    worker takes the smallest count; without CUDA graphs' check (0.20+) it starts, and one block runs nothing."""
    assert main(["size", "nemotron-h-8b", "--gpu", "h200", "--engine", "vllm", "--engine-version", "0.10.2", "--pp", "2",
                 "--pp-partition", "51,1", "--format", "json"]) == 3
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert {s["num_blocks"] for s in engine["stages"]} == {1} and engine["max_running_requests"] == 0
    assert engine["stages"][-1]["groups"] == {} and engine["stages"][-1]["startup_error"] is None


# --- terminal and output -----------------------------------------------------------------------------------------

EVIL = "tiny\x1b]52;c;aGk=\x07\x1b[2J\x9b\u202e"


def test_user_text_reaches_the_terminal_escaped(tmp_path, capsys):
    """A spec's name with a clipboard write, a screen clear, a C1 CSI and a right-to-left override: shown, not run."""
    path = tmp_path / "evil.yaml"
    path.write_text(Path(TINY_SPEC).read_text().replace("name: tiny-hybrid", f"name: {json.dumps(EVIL)}"))
    for fmt in ("table", "markdown", "csv"):
        assert main(["size", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", out) is None, fmt
    assert main(["size", str(path)]) == 0
    assert capsys.readouterr().out.startswith("tiny\\x1b]52;c;aGk=\\x07\\x1b[2J\\x9b\\u202e (")
    assert main(["size", str(path), "--format", "json"]) == 0
    text = capsys.readouterr().out
    assert json.loads(text)["model"]["name"] == EVIL and re.search("[\x7f-\x9f\u202e]", text) is None


def test_an_error_line_escapes_user_text(tmp_path, capsys):
    line = one_line(["size", str(tmp_path / "a\x1b[2Jb.yaml")], capsys)
    assert "\x1b" not in line and "a\\x1b[2Jb.yaml" in line


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=30))
def test_random_names_never_reach_the_terminal_raw(name):
    from mcache.cli.output import safe_text
    from mcache.core.files import json_text

    shown = safe_text(name)
    assert re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]", shown) is None
    assert json.loads(json_text({"n": name}))["n"] == name  # JSON escapes, and stays exact


def test_a_full_disk_is_one_line_and_exit_4():
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "mcache.cli.main", "size", "nemotron-h-8b"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 4
    assert done.stderr == "mcache: output: stdout: cannot write, No space left on device; the output is incomplete\n"


def test_a_closed_stdout_is_one_line_and_exit_4():
    proc = subprocess.Popen([sys.executable, "-m", "mcache.cli.main", "size", "nemotron-h-8b", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    assert proc.wait(timeout=60) == 4
    assert proc.stderr.read() == ("mcache: output: stdout: cannot write, it was closed (a broken pipe); the output is "
                                  "incomplete\n")


def test_plan_plot_writes_nothing_outside_its_file(tmp_path):
    """matplotlib's font cache and config go to a temporary folder: the home folder stays empty."""
    pytest.importorskip("matplotlib")
    home, plot = tmp_path / "home", tmp_path / "plan.png"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config")}
    env.pop("MPLCONFIGDIR", None)
    subprocess.run([sys.executable, "-m", "mcache.cli.main", "plan", "nemotron-h-8b", "--gpu", "h200", "--plot", str(plot)],
                   env=env, check=True, capture_output=True, timeout=120)
    assert plot.stat().st_size > 0 and list(home.iterdir()) == []


# --- help ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize("command", ["size", "plan", "bench", "compare", "export", "import-hf", "spec validate", "explain"])
def test_nothing_is_cut_in_help(command, columns, capsys, monkeypatch):
    """The engines' names of an option are in its description ("Also --max-model-len."), so the option column holds
    one name each; long choices and lists are in the description, where they wrap: no "…" anywhere."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main([*command.split(), "--help"]) == 0
    out = capsys.readouterr().out
    names = [m.group(1) for line in out.splitlines() if (m := re.match(r"│\s*\*?\s+(--\S+)", line))]
    assert names and "…" not in out, [line for line in out.splitlines() if "…" in line]
    assert max(len(line) for line in out.splitlines()) <= columns


def test_an_alias_is_the_option(capsys):
    for args in (["--max-model-len", "4096"], ["--max-model-len=4096"], ["--context-length", "4096"]):
        assert main(["size", "nemotron-h-8b", *args, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["runtime"]["max_seq_len"] == 4096


def test_help_text_is_not_eaten_as_markup(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["plan", "--help"]) == 0
    assert "(needs mcache[plot])" in capsys.readouterr().out


# --- -o and its format ---------------------------------------------------------------------------------------------


def test_o_naming_an_input_is_refused_before_any_work(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text((HF_CONFIGS / "bamba-9b.json").read_text())
    before = config.read_text()
    spec = tmp_path / "s.yaml"
    spec.write_text(Path(TINY_SPEC).read_text())
    (tmp_path / "link.yaml").symlink_to(spec)
    for args, target, source in ((["import-hf", str(config)], config, config), (["size", str(config)], config, config),
                                 (["size", str(tmp_path)], config, config), (["plan", str(spec), "--gpu", "h200"], spec, spec),
                                 (["size", str(spec)], tmp_path / "link.yaml", spec)):
        line = one_line([*args, "-o", str(target)], capsys)
        assert line == f"mcache: {target}: output: a file other than the input {source}, which it would overwrite"
    assert config.read_text() == before


@pytest.mark.parametrize("suffix, starts", [(".json", "{"), (".md", "### "), (".csv", "stage,"), (".txt", "tiny-hybrid")])
def test_o_without_format_takes_it_from_the_suffix(tmp_path, suffix, starts):
    out = tmp_path / f"k{suffix}"
    assert main(["size", TINY_SPEC, "-o", str(out)]) == 0
    assert out.read_text().startswith(starts)
    if suffix == ".json":
        json.loads(out.read_text())


def test_csv_carries_the_capacity_the_table_shows(capsys):
    assert main(["size", "nemotron-h-8b", "--gpu", "h200", "--format", "json"]) == 0
    cap = json.loads(capsys.readouterr().out)["capacity"]["ranks"][0]
    assert main(["size", "nemotron-h-8b", "--gpu", "h200", "--format", "csv"]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    head, row = blocks[1].splitlines()
    assert head.startswith("stage,weights,cache budget,") and row.split(",")[6] == str(cap["max_sequences"]) == "630"


class _Failing:
    """A stdout whose writes fail with `error` after `good` characters went through."""

    def __init__(self, error: OSError, good: int):
        self.error, self.good, self.written = error, good, 0

    def write(self, text: str) -> int:
        if self.written + len(text) > self.good:
            raise self.error
        self.written += len(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EBADF]), st.integers(0, 4000),
       st.sampled_from(["table", "json", "csv", "markdown"]))
def test_random_broken_outputs_are_one_line_and_exit_4(monkeypatch, capsys, code, good, fmt):
    error = BrokenPipeError(code, os.strerror(code)) if code == errno.EPIPE else OSError(code, os.strerror(code))
    monkeypatch.setattr(sys, "stdout", _Failing(error, good))
    result = main(["size", "nemotron-h-8b", "--gpu", "h200", "--format", fmt])
    err = capsys.readouterr().err
    if result == 0:  # everything fit in the `good` characters
        assert err == ""
        return
    assert result == 4 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("mcache: output: stdout: cannot write, ") and err.endswith("; the output is incomplete\n")


def test_a_name_that_would_forge_a_line_of_output_is_one_line(tmp_path, capsys):
    path = tmp_path / "forged.yaml"
    path.write_text(Path(TINY_SPEC).read_text().replace("name: tiny-hybrid", 'name: "a\\nmcache fits 999999 sequences"'))
    assert "name: one line of text, got 'a\\nmcache fits 999999 sequences'" in one_line(["size", str(path)], capsys)


def test_an_error_line_keeps_a_line_break_of_user_text_escaped(capsys):
    line = one_line(["size", "nemotron-h-8b", "--gpu", "l4\nfake"], capsys)
    assert "'l4\\nfake'" in line


def test_a_markdown_cell_keeps_its_pipe():
    from mcache.cli.output import markdown_table

    assert markdown_table(("a", "b"), [["x|y", "z"]]).splitlines()[2] == "| x\\|y | z |"


def test_an_endless_results_file_is_refused_after_its_limit(capsys):
    line = one_line(["compare", "/dev/zero", "/dev/zero"], capsys)
    assert f"a file of at most {MAX_DOCUMENT_BYTES >> 20} MiB" in line


@pytest.mark.parametrize("command", ["bench", "plan-from-log", "size-index"])
def test_an_output_over_any_input_is_refused_before_work(command, tmp_path, capsys):
    """`-o` never names a file the command reads: bench's spec, plan's --from-log / --bandwidth-from, a checkpoint
    folder's safetensors index (the input is left as it was)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(Path(TINY_SPEC).read_text())
    if command == "bench":
        argv, victim = ["bench", str(spec), "--device", "cpu", "--ops", "reset", "-o", str(spec)], spec
    elif command == "plan-from-log":
        victim = tmp_path / "boot.log"
        victim.write_text("(EngineCore pid=1) INFO [gpu_worker.py:1] Available KV cache memory: 5.98 GiB\n")
        argv = ["plan", str(spec), "--gpu", "h100", "--from-log", str(victim), "-o", str(victim)]
    else:
        folder = tmp_path / "ckpt"
        folder.mkdir()
        (folder / "config.json").write_text((HF_CONFIGS / "lfm2-1.2b.json").read_text())
        victim = folder / "model.safetensors.index.json"
        victim.write_text(json.dumps({"metadata": {"total_size": 2 << 30}, "weight_map": {}}))
        argv = ["size", str(folder), "-o", str(victim)]
    before = victim.read_bytes()
    assert "which it would overwrite" in one_line(argv, capsys)
    assert victim.read_bytes() == before


@pytest.mark.parametrize(("old", "new", "words"), [
    ("n_groups: 2", "n_groups: 3", "mamba2.n_groups: a divisor of 4 heads (each group serves as many heads), got 3"),
    ("num_k_heads: 2, num_v_heads: 4", "num_k_heads: 3, num_v_heads: 4", "gdn.num_k_heads: a divisor of 4 heads"),
    ("vocab_size: 128", "vocab_size: 128\nmoe: {num_experts: 4, top_k: 5, expert_intermediate_size: 8}",
     "moe.top_k: at most num_experts (4), got 5"),
    ("vocab_size: 128", "vocab_size: 128\nmtp: {num_layers: 1000000, layer: attention}",
     "mtp.num_layers: at most the model's 5 layers"),
    ("types: [mamba2, gdn, attention, mamba1, mamba2]", "types: [mlp, mlp, mlp, mlp, mlp]\nmlp: {intermediate_size: 8}",
     "layers.types: at least one layer of a kind that keeps a cache"),
])
def test_heads_groups_experts_and_drafting_layers_that_do_not_add_up_are_one_line(old, new, words, tmp_path, capsys):
    # a config's n_groups of 7 for 128 heads, top-k above the experts or a million MTP layers sized with no word
    text = Path(TINY_SPEC).read_text()
    assert old in text
    path = tmp_path / "odd.yaml"
    path.write_text(text.replace(old, new, 1))
    assert words in one_line(["size", str(path)], capsys)


@pytest.mark.parametrize("kv", [3, 16])
def test_kv_heads_that_serve_no_whole_query_heads_are_one_line(kv, tmp_path, capsys):
    path = tmp_path / "heads.yaml"
    text = Path(TINY_SPEC).read_text()
    path.write_text(re.sub(r"num_kv_heads: \d+", f"num_kv_heads: {kv}", text, count=1))
    assert "attention.num_kv_heads: a divisor of num_heads" in one_line(["size", str(path)], capsys)


def test_a_petabyte_is_a_size():
    from mcache.core.sizing.gpus import parse_size

    assert parse_size("1PiB", "gpu_memory") == 1 << 50 and parse_size("1PB", "gpu_memory") == 10**15


def test_a_key_given_twice_in_a_spec_is_one_line_naming_both(tmp_path, capsys):
    # YAML keeps the last silently: a second hidden_size would double the weights with no word
    path = tmp_path / "twice.yaml"
    text = Path(TINY_SPEC).read_text()
    path.write_text(text + "hidden_size: 8192\n")
    line = one_line(["size", str(path)], capsys)
    assert f"hidden_size: a key given once in its mapping (given again on line {len(text.splitlines()) + 1})" in line
    from mcache.core.load import _repeated_key

    merged = yaml.compose("a: &b {x: 1}\nc: {<<: *b, y: 2}\n")
    assert _repeated_key(merged) is None  # a merge key is no repeat
    assert _repeated_key(yaml.compose("a: {x: 1, y: 2, x: 3}\n")) == ("x", 1)


@pytest.mark.parametrize("command", [["size", "nemotron-h-8b"], ["plan", "nemotron-h-8b", "--gpu", "h100"]])
def test_an_output_named_dash_is_refused_not_written(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "a file path; leave -o out to write to stdout" in one_line([*command, "-o", "-"], capsys)
    assert not (tmp_path / "-").exists()


def test_a_character_yaml_forbids_is_one_line_naming_its_line(tmp_path, capsys):
    text = Path(TINY_SPEC).read_text().splitlines(keepends=True)
    path = tmp_path / "nul.yaml"
    path.write_text("".join(text[:2]) + text[2].rstrip("\n") + "\x00\n" + "".join(text[3:]))
    line = one_line(["size", str(path)], capsys)
    assert "nul.yaml:3: yaml: valid YAML (" in line and line.endswith("characters are not allowed: U+0000)")


def test_a_byte_that_is_not_utf8_is_one_line_naming_its_line(tmp_path, capsys):
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"name: tiny\nnotes: caf\xe9\n")
    assert one_line(["size", str(path)], capsys).endswith(
        "latin.yaml:2: file: a readable UTF-8 file (byte 0xe9 at offset 21 is not UTF-8)")


def test_bench_repetitions_are_bounded(capsys):
    line = one_line(["bench", TINY_SPEC, "--device", "cpu", "--reps", str(2**40)], capsys)
    assert line == "mcache: --reps: an integer from 1 to 10000, got 1099511627776"


def test_a_bench_cache_beyond_the_free_memory_is_refused_before_allocating(capsys, monkeypatch):
    pytest.importorskip("torch")
    from mcache.bench import device_info

    monkeypatch.setattr(device_info, "free_bytes", lambda device: 1 << 20)  # 1 MiB free
    line = one_line(["bench", "nemotron-h-8b", "--device", "cpu", "--batch", "1", "--ops", "reset"], capsys)
    assert line.startswith("mcache: bench: the cache of one rank takes ") and "more than the 0.00 GiB free on cpu" in line
