"""`--engine-version`: which modelled release answers for the version a user runs (`core/engines/versions.py`)."""

import json

import pytest
from cli_util import one_line

from mcache.cli.main import main
from mcache.core.engines import newest_version
from mcache.core.engines.versions import EngineVersion, at_least, key, resolve
from mcache.core.errors import LayoutError

MODELLED = ("0.10.2", "0.20.1", "0.33.0")


@pytest.mark.parametrize(("text", "expected"), [("0.33", (0, 33, 0, 0)), ("0.33.0", (0, 33, 0, 0)),
                                                ("v0.10.2", (0, 10, 2, 0)), ("1.2.0rc3", (1, 2, 0, 0)),
                                                ("0.11.0.post1", (0, 11, 0, 1)), ("0.5.4post3", (0, 5, 4, 3)),
                                                ("0.20.1rc1.dev16+g1a2b3c", (0, 20, 1, 0)), ("0.20.1.dev3", (0, 20, 1, 0)),
                                                ("0.10.1.1", (0, 10, 1, 1)), ("0.9.0.1", (0, 9, 0, 1))])
def test_release_keys(text, expected):
    assert key(text) == expected


def test_a_development_build_takes_the_release_it_names():
    # a public vLLM 0.20.1rc1.dev91 boot already sizes its KV pool by 0.20.1's formula
    # (tests/data/engine_logs/vllm/nemotron-cascade2-30b-nvfp4-rtx5090-wsl-0.20.1rc1-256k.log), as the log reader takes it
    assert key("0.20.0") < key("0.20.1rc1.dev16") == key("0.20.1rc1") == key("0.20.1")
    assert resolve("vLLM", MODELLED, "0.20.1rc1.dev91+ga749a33d8").modelled == "0.20.1"
    assert resolve("vLLM", MODELLED, "0.10.2.dev756+gfx906").modelled == "0.10.2"


def test_a_post_release_comes_between_its_release_and_the_next():
    # SGLang cuts post releases from its main branch: 0.5.4.post1 already runs rules of 0.5.5 (scripts/oracles/
    # sglang_versions.md), so one is no longer taken for its release
    assert key("0.5.4") < key("0.5.4.post1") < key("0.5.4.post3") < key("0.5.5")
    got = resolve("SGLang", ("0.5.4", "0.5.4.post1", "0.5.5"), "0.5.4.post2")
    assert got.modelled == "0.5.4.post1"
    assert got.note == "SGLang 0.5.4.post2 is sized by the rules of 0.5.4.post1, the newest modelled release before it"


def test_a_fourth_number_is_a_fix_of_its_release():
    # vLLM published 0.9.0.1 and 0.10.1.1: each is refused as older than the oldest modelled release, not as no release
    assert key("0.10.1") < key("0.10.1.1") < key("0.10.2")
    with pytest.raises(LayoutError, match=r"vLLM 0\.10\.2 or later .*got 0\.10\.1\.1"):
        resolve("vLLM", MODELLED, "0.10.1.1")
    assert resolve("vLLM", MODELLED, "0.20.1.1").modelled == "0.20.1"


def test_a_branch_comes_after_every_release():
    assert key("main@151c21c") == key("main") > key("99.0")
    assert at_least("main@151c21c", "1.2.0") and at_least("0.33.0", "0.33") and not at_least("0.32.1", "0.33.0")


@pytest.mark.parametrize("bad", ["latest", "0", "1.2.3.4.5", "", "0.33.0; rm -rf /", "9" * 40 + ".1"])
def test_a_version_that_is_no_release_is_refused(bad):
    with pytest.raises(LayoutError) as err:
        key(bad)
    assert err.value.field == "engine_version"


def test_the_newest_answers_when_no_version_is_asked():
    assert resolve("vLLM", MODELLED, None) == EngineVersion("0.33.0")


def test_a_modelled_release_answers_for_itself_however_spelled():
    assert resolve("vLLM", MODELLED, "0.20.1") == EngineVersion("0.20.1", "0.20.1")
    assert resolve("vLLM", MODELLED, "v0.33") == EngineVersion("0.33.0", "v0.33")


def test_a_release_between_two_takes_the_older_and_says_so():
    got = resolve("vLLM", MODELLED, "0.25.0")
    assert got.modelled == "0.20.1" and got.requested == "0.25.0"
    assert got.note == "vLLM 0.25.0 is sized by the rules of 0.20.1, the newest modelled release before it"


def test_a_newer_release_takes_the_newest_with_a_note():
    got = resolve("vLLM", MODELLED, "0.40")
    assert got.modelled == "0.33.0" and "newer than the newest release mcache models" in got.note


def test_the_branch_at_another_commit_is_sized_as_the_modelled_one_and_says_so():
    branch = ("1.2.0", "main@151c21c")
    assert resolve("TensorRT-LLM", branch, "main") == EngineVersion("main@151c21c", "main")
    got = resolve("TensorRT-LLM", branch, "main@deadbeef")
    assert got.modelled == "main@151c21c" and got.note == ("TensorRT-LLM main@deadbeef is sized as main@151c21c, the "
                                                           "commit of the branch mcache models")


def test_a_release_before_the_oldest_is_refused():
    with pytest.raises(LayoutError, match=r"vLLM 0.10.2 or later .*got 0.9.2"):
        resolve("vLLM", MODELLED, "0.9.2")


def test_the_json_says_which_release_sized_it_and_which_was_asked(capsys):
    assert main(["size", "nemotron-h-8b", "--engine", "vllm", "--engine-version", "0.99", "--format", "json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine"]
    assert engine["version"] == newest_version("vllm") and engine["version_requested"] == "0.99"
    assert "0.99 is newer" in engine["version_note"]


def test_the_table_says_the_note(capsys):
    assert main(["size", "nemotron-h-8b", "--engine", "sglang", "--engine-version", "9.0", "--gpu", "h200"]) == 0
    assert "note: SGLang 9.0 is newer than the newest release mcache models" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--engine-version", "0.33.0"], "--engine-version: the release of the engine named by --engine; add --engine"),
    (["--engine", "vllm", "--engine-version", "latest"], "--engine-version: a release such as 0.33.0 or 1.2 (or main)"),
])
def test_bad_versions_are_one_line(argv, message, capsys):
    err = one_line(["size", "nemotron-h-8b", *argv], capsys)
    assert message in err

