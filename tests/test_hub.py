"""Hub ids as a SPEC (`ORG/NAME[@REVISION]`), offline: a Hugging Face cache laid out as huggingface_hub lays it out
(refs, snapshots linked to blobs, `.no_exist` markers) in a temporary folder, and the library's download replaced
for the answers only a network gives (unknown repo, gated repo, no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from cli_util import one_line
from huggingface_hub import constants, errors
from paths import HF_CONFIGS

from mcache.core import hub
from mcache.core.errors import SpecError
from mcache.core.load import load_spec, resolve
from mcache.core.sizing.weights import stored_bytes

REPO = "nvidia/Nemotron-H-8B-Base-8K"
MAIN, OLD = "a" * 40, "b" * 40
NEMOTRON = json.loads((HF_CONFIGS / "nemotron-h-8b-base-8k.json").read_text())
QWEN = HF_CONFIGS / "centml-qwen3.6-27b-nvfp4"


def lay_out(cache: Path, repo: str, commit: str, files: dict[str, str], refs=("main",), missing=()) -> Path:
    """One commit of `repo` in a huggingface_hub cache: blobs, a snapshot folder linking to them, refs naming the
    commit, and `.no_exist` markers for files the repo is known not to have."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (root / "blobs").mkdir(exist_ok=True)
    for name, text in files.items():
        blob = root / "blobs" / f"{abs(hash((commit, name))):x}"
        blob.write_text(text)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    (root / "refs").mkdir(exist_ok=True)
    for ref in refs:
        (root / "refs" / ref).write_text(commit)
    for name in missing:
        marker = root / ".no_exist" / commit / name
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    return snapshot


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache the library reads, offline (as HF_HUB_CACHE and HF_HUB_OFFLINE would set it)."""
    folder = tmp_path / "hub"
    folder.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(folder))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub.cache_clear()
    yield folder
    hub.cache_clear()


def test_a_cached_repo_sizes_offline_under_its_repo_name(cache):
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(NEMOTRON)}, missing=["hf_quant_config.json"])
    spec = load_spec(REPO)
    assert spec.name == "Nemotron-H-8B-Base-8K" and spec.source.startswith(f"{REPO}@{MAIN} (model_type nemotron_h)")
    assert f"Read from the Hugging Face Hub: {REPO} at main (commit {MAIN[:12]}); it has no hf_quant_config.json." in spec.notes
    bundled = load_spec("nemotron-h-8b")
    assert stored_bytes(spec) == stored_bytes(bundled) and spec.layers == bundled.layers
    assert resolve(REPO) == cache / "models--nvidia--Nemotron-H-8B-Base-8K" / "snapshots" / MAIN


def test_a_revision_picks_its_commit(cache):
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(NEMOTRON)}, missing=["hf_quant_config.json"])
    older = {**NEMOTRON, "vocab_size": 1000}
    lay_out(cache, REPO, OLD, {"config.json": json.dumps(older)}, refs=("v1",), missing=["hf_quant_config.json"])
    by_tag, by_commit = load_spec(f"{REPO}@v1"), load_spec(f"{REPO}@{OLD}")
    assert by_tag.vocab_size == by_commit.vocab_size == 1000 and load_spec(REPO).vocab_size == NEMOTRON["vocab_size"]
    assert f"at v1 (commit {OLD[:12]})" in by_tag.notes and by_tag.source.startswith(f"{REPO}@{OLD}")


def test_the_snapshot_is_a_checkpoint_folder_so_its_quant_file_counts(cache):
    """A ModelOpt checkpoint whose settings are only in hf_quant_config.json: read, since it is the repo's."""
    data = json.loads((QWEN / "config.json").read_text())
    del data["quantization_config"]
    lay_out(cache, "centml/Qwen3.6-27B-NVFP4", MAIN, {"config.json": json.dumps(data),
                                                      "hf_quant_config.json": (QWEN / "hf_quant_config.json").read_text()})
    spec = load_spec("centml/Qwen3.6-27B-NVFP4")
    assert spec.quantization.format == "nvfp4" and "with its hf_quant_config.json" in spec.notes


def test_offline_without_knowing_the_quant_file_says_so(cache):
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(NEMOTRON)})  # no .no_exist marker: never asked
    spec = load_spec(REPO)
    assert spec.quantization is None and "hf_quant_config.json is not in the local cache (offline)" in spec.notes


def test_offline_and_not_cached_is_one_line(cache, capsys):
    line = one_line(["size", "nvidia/Nemotron-H-4B-Base-8K"], capsys)  # no bundled spec names this repo
    assert line.startswith("mcache: nvidia/Nemotron-H-4B-Base-8K: hub: config.json in the local Hugging Face cache "
                           "(HF_HUB_OFFLINE is set")


def test_a_cached_repo_without_the_config_file_is_one_line(cache, capsys):
    lay_out(cache, "org/model", MAIN, {"README.md": "# a model"})
    line = one_line(["size", "org/model"], capsys)
    assert "hub: config.json in the local Hugging Face cache" in line
    line = one_line(["size", "org/model@v9"], capsys)  # a revision the cache does not know, offline
    assert "hub: config.json in the local Hugging Face cache" in line


def _http_error(cls, status: int):
    return cls(f"{status} Client Error", response=SimpleNamespace(headers={}, request=None, status_code=status))


@pytest.mark.parametrize("raised,expected", [
    (lambda: _http_error(errors.RepositoryNotFoundError, 404), "the Hub has no repo nvidia/nope (a private one needs HF_TOKEN)"),
    (lambda: _http_error(errors.GatedRepoError, 403), "it is gated; accept its terms on its Hub page, then set HF_TOKEN"),
    (lambda: _http_error(errors.RevisionNotFoundError, 404), "revision: a branch, tag or commit of nvidia/nope"),
    (lambda: _http_error(errors.RemoteEntryNotFoundError, 404), "config.json: a file of the repo: nvidia/nope at"),
    (lambda: errors.LocalEntryNotFoundError("cannot find the requested files"), "the Hub did not answer and the local "
                                                                                "cache has no copy; check the network"),
    (lambda: _http_error(errors.HfHubHTTPError, 503), "an answer from the Hub, got HTTP 503"),
])
def test_what_only_the_network_answers_is_one_line(cache, monkeypatch, capsys, raised, expected):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    def download(*args, **kwargs):
        raise raised()

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    line = one_line(["size", "nvidia/nope@v2" if "revision" in expected else "nvidia/nope"], capsys)
    assert expected in line, line
    with pytest.raises(SpecError):
        hub.snapshot("nvidia/nope")


def test_online_the_library_fetches_only_the_config_files(cache, monkeypatch):
    """Online, mcache asks the library for config.json, hf_quant_config.json and the safetensors index, nothing
    else; a repo without the optional files is answered by the Hub (RemoteEntryNotFoundError)."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    asked = []

    def download(repo, filename, revision=None, **kwargs):
        asked.append((repo, filename, revision))
        if filename == "config.json":
            return str(lay_out(cache, repo, MAIN, {"config.json": json.dumps(NEMOTRON)}) / filename)
        raise _http_error(errors.RemoteEntryNotFoundError, 404)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    spec = load_spec(f"{REPO}@main")
    assert asked == [(REPO, "config.json", "main"), (REPO, "hf_quant_config.json", MAIN),
                     (REPO, "model.safetensors.index.json", MAIN)]
    assert "it has no hf_quant_config.json" in spec.notes and "It has no model.safetensors.index.json" in spec.notes
    load_spec(f"{REPO}@main")
    assert len(asked) == 3  # resolved once per process


def test_a_path_that_exists_wins_and_a_bare_name_never_goes_to_the_hub(tmp_path, monkeypatch, cache):
    def never(ref):
        raise AssertionError(f"asked the Hub for {ref}")

    monkeypatch.setattr(hub, "snapshot", never)
    folder = tmp_path / "nvidia" / "Nemotron-H-8B-Base-8K"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(NEMOTRON))
    monkeypatch.chdir(tmp_path)
    assert load_spec(REPO).name == "Nemotron-H-8B-Base-8K" and "Hugging Face Hub" not in load_spec(REPO).notes
    assert load_spec("nemotron-h-8b").name == "Nemotron-H-8B-Base-8K"
    with pytest.raises(SpecError, match="did you mean"):
        load_spec("nemotron-h-8")


@pytest.mark.parametrize("ref,parsed", [
    ("nvidia/Nemotron-H-8B-Base-8K", ("nvidia/Nemotron-H-8B-Base-8K", None)),
    ("Qwen/Qwen3.5-27B@refs/pr/3", ("Qwen/Qwen3.5-27B", "refs/pr/3")),
    ("org/name@" + "c" * 40, ("org/name", "c" * 40)),
    ("nemotron-h-8b", None), ("./org/name", None), ("/org/name", None), ("org/name/extra", None),
    ("specs/model.yaml", None), ("org/config.json", None), ("org--x/name", None), ("org/na..me", None),
])
def test_what_reads_as_a_hub_id(ref, parsed):
    assert hub.hub_id(ref) == parsed


def test_the_environment_is_honoured_and_a_bundled_name_loads_no_hub(tmp_path):
    """Through a real process: HF_HUB_CACHE and HF_HUB_OFFLINE as a user sets them; and `mcache size` on a bundled
    name never imports huggingface_hub (start-up time)."""
    lay_out(tmp_path, REPO, MAIN, {"config.json": json.dumps(NEMOTRON)}, missing=["hf_quant_config.json"])
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "mcache.cli.main", "size", REPO, "--format", "json"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["model"]["name"] == "Nemotron-H-8B-Base-8K"
    code = ("import sys; from mcache.cli.main import main; main(['size', 'nemotron-h-8b', '--format', 'json']); "
            "print('huggingface_hub' in sys.modules, file=sys.stderr)")
    bare = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert bare.stderr.strip().splitlines()[-1] == "False", bare.stderr
