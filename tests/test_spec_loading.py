"""Spec loading: broken specs raise one `SpecError` that names the file, the field and (where the YAML
parses) the line."""

from __future__ import annotations

import pytest

from mcache.core.errors import SpecError
from mcache.core.load import load_spec, parse_spec

FILE = "broken.yaml"

# A valid spec; every case below breaks one thing in it. The expected line (1-based) is the offending
# value's, or the enclosing mapping's for something missing; `None` means the line is not checked
# (a document that is not a mapping has no field to point at; a missing block has only line 1).
VALID = """\
name: tiny
source: test
hidden_size: 256
vocab_size: 1000
num_layers: 4
layers:
  pattern: "M*M-"
attention: {num_heads: 8, num_kv_heads: 2, head_dim: 32}
mamba2:
  num_heads: 8
  head_dim: 32
  state_size: 16
mlp: {intermediate_size: 512}
"""


def test_valid_base_parses():
    spec = parse_spec(VALID, FILE)
    assert (spec.num_layers, spec.mamba2.num_heads, spec.mlp.intermediate_size) == (4, 8, 512)


CASES = [
    pytest.param(VALID.replace('pattern: "M*M-"', "pattern: [M, *"), "yaml", 7, id="malformed-yaml"),
    pytest.param("- name: tiny\n- source: test\n", "document", None, id="top-level-list"),
    pytest.param("just a string\n", "document", None, id="top-level-scalar"),
    pytest.param(VALID + "colour: blue\n", "colour", 14, id="unknown-top-level-key"),
    pytest.param(VALID.replace("  state_size: 16\n", "  state_size: 16\n  d_conv: 4\n"), "mamba2.d_conv", 13,
                 id="unknown-key-in-block"),
    pytest.param(VALID.replace("  num_heads: 8\n", "  num_heads: eight\n"), "mamba2.num_heads", 10,
                 id="wrong-type"),
    pytest.param(VALID.replace("num_layers: 4", "num_layers: -4"), "num_layers", 5, id="negative-int"),
    pytest.param(VALID.replace("head_dim: 32}", "head_dim: 0}"), "attention.head_dim", 8, id="zero-int"),
    pytest.param(VALID.replace("source: test\n", ""), "source", 1, id="missing-required-field"),
    pytest.param(VALID.replace("  state_size: 16\n", ""), "mamba2.state_size", 10, id="missing-block-field"),
    pytest.param(VALID.replace('"M*M-"', '"M*M"'), "layers.pattern", 7, id="pattern-length"),
    pytest.param(VALID.replace('"M*M-"', '"M*X-"'), "layers.pattern", 7, id="pattern-char-not-in-legend"),
    pytest.param(VALID.replace('"M*M-"', '"MAM-"\n  legend: {M: mamba2, "-": mlp}'), "layers.pattern", 7,
                 id="pattern-char-not-in-own-legend"),
    pytest.param(VALID.replace('pattern: "M*M-"', "types: [mamba2, attention, mamba3, mlp]"), "layers.types[2]",
                 7, id="unknown-kind-in-types"),
    pytest.param(VALID.replace('"M*M-"', '"MEM-"'), "layers.pattern[1]", 7, id="kind-without-block"),
    pytest.param(VALID.replace('pattern: "M*M-"', "types: [mamba2, attention, mamba2+mamba2, mlp]"),
                 "layers.types[2]", 7, id="kind-twice-in-a-layer"),
    pytest.param(VALID.replace('pattern: "M*M-"', 'pattern: "M*M-"\n  types: [mlp, mlp, mlp, mlp]'), "layers",
                 7, id="pattern-and-types"),
    pytest.param(VALID.replace('pattern: "M*M-"', "types: [mamba2, attention, mamba2, mlp]\n  legend: {M: mlp}"),
                 "layers.legend", 8, id="legend-without-pattern"),
    pytest.param(VALID.replace('pattern: "M*M-"', "repeat: []"), "layers.repeat", 7, id="empty-repeat"),
    pytest.param(VALID + "dtype: bfloat17\n", "dtype", 14, id="bad-dtype"),
    pytest.param(VALID + "ssm_dtype: fp8\n", "ssm_dtype", 14, id="fp8-state-dtype"),
    pytest.param(VALID + "mtp: {num_layers: 1, layer: attention+moe}\n", "mtp.layer", 14, id="mtp-kind-no-block"),
    pytest.param(VALID + "aux_buffers:\n  - {name: x, shape: [4], dtype: int7, per: slot}\n",
                 "aux_buffers[0].dtype", 15, id="aux-buffer-bad-dtype"),
    pytest.param(VALID + "aux_buffers:\n  - {name: x, shape: [4], dtype: int32, per: step}\n",
                 "aux_buffers[0].per", 15, id="aux-buffer-bad-per"),
    pytest.param(VALID + "aux_buffers:\n  - {name: x, shape: [4], dtype: int32, per: slot, layer_kind: mamba3}\n",
                 "aux_buffers[0].layer_kind", 15, id="aux-buffer-bad-kind"),
]


@pytest.mark.parametrize(("text", "field", "line"), CASES)
def test_broken_spec(text, field, line):
    with pytest.raises(SpecError) as info:
        parse_spec(text, FILE)
    err = info.value
    assert (err.file, err.field) == (FILE, field)
    assert str(err).startswith(FILE)
    assert f": {field}: " in str(err)
    if line is not None:
        assert err.line == line
        assert str(err).startswith(f"{FILE}:{line}: ")


def test_error_names_the_file_on_disk(tmp_path):
    path = tmp_path / "my-model.yaml"
    path.write_text(VALID.replace("  num_heads: 8\n", "  num_heads: eight\n"))
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert str(info.value).startswith(f"{path}:10: mamba2.num_heads: ")


def test_unreadable_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert (info.value.file, info.value.field) == (str(path), "file")


def test_unknown_bundled_name_suggests_the_closest():
    with pytest.raises(SpecError) as info:
        load_spec("nemotron-h-9b")
    assert info.value.field == "file"
    assert str(info.value).endswith("did you mean nemotron-h-8b, nemotron-h-56b or nemotron-3-nano-30b-a3b?")


def test_bundled_lookup_is_exact():
    with pytest.raises(SpecError) as info:
        load_spec("Nemotron-H-8B")
    assert str(info.value).endswith("did you mean nemotron-h-8b?")


def test_file_path_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(VALID)
    assert load_spec(str(path)).name == "tiny"


@pytest.mark.parametrize(("text", "field", "line"), CASES)
def test_broken_spec_through_the_cli_is_one_line(text, field, line, tmp_path, capsys):
    from mcache.cli.main import main

    path = tmp_path / FILE
    path.write_text(text)
    for command in (["size", str(path)], ["spec", "validate", str(path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"mcache: {path}") and f": {field}: " in err
        assert err.count("\n") == 1 and "Traceback" not in err
