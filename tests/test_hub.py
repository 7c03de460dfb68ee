"""Hub ids as a SPEC (`ORG/NAME[@REVISION]`), offline: a Hugging Face cache laid out as huggingface_hub lays it out
(refs, snapshots linked to blobs, `.no_exist` markers) in a temporary folder, and the library's download replaced
for the answers only a network gives (unknown repo, gated repo, no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from cli_util import one_line
from huggingface_hub import constants, errors
from paths import HF_CONFIGS

from mcache.cli.main import main
from mcache.cli.output import human_bytes
from mcache.core import hub
from mcache.core.errors import SpecError
from mcache.core.hf.index import INDEX, MAX_INDEX_BYTES
from mcache.core.load import load_spec, resolve
from mcache.core.sizing.vision import tower_params
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
    monkeypatch.setattr(hub, "unresolvable_host", lru_cache(maxsize=1)(lambda: None))  # a network, when a test is online
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


def test_a_hub_host_that_does_not_resolve_is_read_from_the_cache_at_once(cache, monkeypatch, capsys):
    """No network: the library would retry five times (23 s); mcache asks its cache alone and says why."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "unresolvable_host", lru_cache(maxsize=1)(lambda: "huggingface.co"))
    asked = []

    def download(repo, filename, revision=None, **kwargs):
        asked.append(kwargs.get("local_files_only"))
        raise errors.LocalEntryNotFoundError("cannot find the requested files")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    line = one_line(["size", "nvidia/nope"], capsys)
    assert "the Hub's host huggingface.co does not resolve here (no network?) and the local cache has no copy" in line
    assert asked == [True]


def test_the_hub_host_is_resolved_unless_a_proxy_resolves_it(monkeypatch):
    import socket

    def no_dns(host, port, *args):
        assert (host, port) == ("hub.example", 8443)
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.example:8443")
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    for name in hub.PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    hub.cache_clear()
    assert hub.unresolvable_host() == "hub.example"
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    hub.cache_clear()
    assert hub.unresolvable_host() is None
    hub.cache_clear()


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

    def metadata(url, **kwargs):
        raise _http_error(errors.RemoteEntryNotFoundError, 404)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", metadata)
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


# --- the safetensors index: its stored size beside the estimate, and in its place when the config cannot say ---

def run_json(*args: str) -> dict:
    """`mcache size ARGS --format json`'s report."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["size", *args, "--format", "json"]) == 0
    return json.loads(out.getvalue())


def index_text(total, names=("backbone.embeddings.weight",), **extra) -> str:
    """A `model.safetensors.index.json` as transformers' save_pretrained writes it."""
    return json.dumps({"metadata": {"total_size": total, **extra}, "weight_map": {n: "model-00001-of-00002.safetensors"
                                                                                 for n in names}})


def checkpoint(folder: Path, config: dict, index: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if index is not None:
        (folder / INDEX).write_text(index)
    return folder


def test_a_cached_index_is_reported_beside_the_estimate(cache):
    """Within 2% of mcache's estimate: the figure and its file, no note; further off: a note saying by how much."""
    estimate = stored_bytes(load_spec("nemotron-h-8b"))
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(NEMOTRON), INDEX: index_text(estimate + estimate // 100)},
            missing=["hf_quant_config.json"])
    model = run_json(REPO)["model"]
    assert model["stored_bytes_index"] == estimate + estimate // 100 and model["param_bytes"] == estimate
    assert model["stored_bytes_index_source"] == f"{INDEX} of {REPO}@{MAIN}"
    assert "checkpoint stores" not in model["notes"] and "not in the local cache" not in model["notes"]
    hub.cache_clear()  # a new commit on main, whose index is 5% larger
    lay_out(cache, REPO, OLD, {"config.json": json.dumps(NEMOTRON), INDEX: index_text(estimate * 105 // 100)},
            missing=["hf_quant_config.json"])
    model = run_json(REPO)["model"]
    assert (f"mcache's weight estimate, 15.09 GiB, is 4.8% below the 15.84 GiB the checkpoint stores ({INDEX} of "
            f"{REPO}@{OLD}, metadata.total_size).") in model["notes"]


def test_offline_without_the_index_in_the_cache_says_so(cache):
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(NEMOTRON)}, missing=["hf_quant_config.json"])
    spec = load_spec(REPO)
    assert spec.stored_weights is None and f"{INDEX} is not in the local cache (offline)" in spec.notes
    hub.cache_clear()
    lay_out(cache, REPO, MAIN, {}, missing=[INDEX])  # the cache knows the repo has none
    assert f"It has no {INDEX}" in load_spec(REPO).notes


def test_a_local_checkpoint_folder_s_index_counts_and_a_lone_config_s_does_not(tmp_path, capsys):
    estimate = stored_bytes(load_spec("nemotron-h-8b"))
    folder = checkpoint(tmp_path / "nemotron", NEMOTRON, index_text(float(estimate * 110 // 100)))  # 1.8e10 is whole
    spec = load_spec(str(folder))
    assert spec.stored_weights.total_size == estimate * 110 // 100 and spec.stored_weights.source == str(folder / INDEX)
    assert "9.1% below" in run_json(str(folder))["model"]["notes"]
    lone = load_spec(str(folder / "config.json"))
    assert lone.stored_weights is None and f"{INDEX} beside config.json was not read" in lone.notes
    assert main(["size", str(folder)]) == 0
    assert f"{human_bytes(estimate * 110 // 100)} in its safetensors index" in capsys.readouterr().out


def test_an_index_that_stores_mtp_tensors_is_compared_with_the_mtp_layers(tmp_path):
    """Qwen3-Next's checkpoint stores its MTP layer (`mtp.*`), which mcache leaves out of the weights one serves
    without a draft: the comparison adds it back, as the index counts it; the weight map gives no share in bytes."""
    config = json.loads((HF_CONFIGS / "qwen3-next-80b-a3b.json").read_text())
    spec = load_spec(str(HF_CONFIGS / "qwen3-next-80b-a3b.json"))
    with_mtp = stored_bytes(spec, mtp=True)
    names = ["model.embed_tokens.weight", "mtp.fc.weight", "mtp.layers.0.self_attn.q_proj.weight"]
    folder = checkpoint(tmp_path / "qwen", config, index_text(with_mtp, names))
    model = run_json(str(folder))["model"]
    assert model["stored_bytes_index"] == with_mtp and "checkpoint stores" not in model["notes"]
    assert load_spec(str(folder)).stored_weights.mtp_tensors == 2
    off = checkpoint(tmp_path / "off", config, index_text(with_mtp * 2, names))
    assert "weight estimate (MTP layers included, as the index stores them)" in run_json(str(off))["model"]["notes"]


# Qwen3.6-27B's bf16 checkpoint (Qwen3_5ForConditionalGeneration, text model + vision tower + MTP layer):
# model.safetensors.index.json metadata.total_size 55,562,855,904 ("55.56 GB bf16, 15 shards": http://eadst.com/blog/325,
# which reads Qwen/Qwen3.6-27B's index; the exact figure as a fine-tune of it with the same shapes prints its index in a
# public session transcript). QWEN's config.json is Qwen3.6-27B's (centml's NVFP4 export of it, same shapes).
QWEN36_27B_TOTAL_SIZE = 55_562_855_904


def test_the_vision_tower_brings_the_estimate_to_the_qwen3_6_27b_index(tmp_path):
    """With its vision tower (460,730,096 parameters in bf16) mcache's estimate is 27,648 bytes (13,824 small norm
    vectors) below the index; without it, it was 1.66% below, 0.86 GiB of weights an engine loads."""
    config = json.loads((QWEN / "config.json").read_text())
    del config["quantization_config"]  # the bf16 checkpoint's config: no NVFP4 export
    names = ["model.language_model.embed_tokens.weight", "model.visual.merger.linear_fc2.weight", "mtp.fc.weight"]
    folder = checkpoint(tmp_path / "qwen36", config, index_text(QWEN36_27B_TOTAL_SIZE, names))
    spec = load_spec(str(folder))
    estimate = stored_bytes(spec, mtp=True)  # the index stores the MTP layer: compared with it
    assert QWEN36_27B_TOTAL_SIZE - estimate == 27_648
    assert round((estimate - 2 * tower_params(spec.vision)) / QWEN36_27B_TOTAL_SIZE - 1, 4) == -0.0166
    assert "checkpoint stores" not in run_json(str(folder))["model"]["notes"]


def no_vocab_minimax() -> dict:
    """MiniMax-Text-01's published (remote-code) config without vocab_size: no config class gives one."""
    data = json.loads((HF_CONFIGS / "minimax-text-01.json").read_text())
    data.update(model_type="minimax_text_01", attn_type_list=[1 if t == "full_attention" else 0 for t in data.pop("layer_types")])
    del data["vocab_size"]
    return data


def test_an_index_gives_capacity_when_the_config_leaves_the_weights_unknown(tmp_path):
    data = no_vocab_minimax()
    total = 900 << 30
    folder = checkpoint(tmp_path / "minimax", data, index_text(total))
    report = run_json(str(folder), "--gpu", "h200", "--tp", "8")
    cap = report["capacity"]
    assert report["model"]["weights_unknown"] == ["vocab_size"] and report["model"]["param_count"] is None
    assert cap["weights_source"] == "index" and not cap["weights_given"]
    assert cap["ranks"][0]["weight_bytes"] == total // 8 and cap["max_sequences"] > 0
    assert ("The config leaves vocab_size unknown, so capacity takes the weights from the checkpoint's safetensors "
            f"index ({folder / INDEX}): 900.00 GiB stored, split evenly over the TP x PP ranks.") in report["model"]["notes"]
    two = run_json(str(folder), "--gpu", "h200", "--tp", "8", "--pp", "2")["capacity"]["ranks"]
    assert [r["weight_bytes"] for r in two] == [total // 16] * 2
    given = run_json(str(folder), "--gpu", "h200", "--tp", "8", "--weights", "60GiB")["capacity"]
    assert given["weights_source"] == "given" and given["ranks"][0]["weight_bytes"] == 60 << 30
    assert run_json("nemotron-h-8b", "--gpu", "h200")["capacity"]["weights_source"] == "estimate"
    # `mcache plan` ranks layouts on the index's share; without an index it asks for --weights
    assert main(["plan", str(folder), "--gpu", "h200", "--context", "65536", "--format", "json"]) == 0
    (folder / INDEX).unlink()
    assert main(["plan", str(folder), "--gpu", "h200", "--context", "65536"]) == 2


def test_an_engine_takes_the_index_s_share_and_says_so(tmp_path):
    folder = checkpoint(tmp_path / "minimax", no_vocab_minimax(), index_text(900 << 30))
    engine = run_json(str(folder), "--gpu", "h200", "--tp", "8", "--engine", "vllm", "--engine-version", "0.22.0",
                      "--max-seq-len", "65536")["engine"]
    assert engine["settings"]["weights_bytes"] == (900 << 30) // 8
    assert "safetensors index" in engine["sources"]["weights_bytes"]


@pytest.mark.parametrize("text,field", [
    ("{", "json: valid JSON"),
    ("[]", "document: a JSON object with metadata and weight_map, got list"),
    (json.dumps({"weight_map": {}}), "metadata: an object holding total_size, got none"),
    (json.dumps({"metadata": {"format": "pt"}, "weight_map": {}}), "metadata.total_size: the stored weights' size, a "
                                                                   "whole number of bytes from 1 to 2^50, got none"),
    (index_text("16GB"), "metadata.total_size: the stored weights' size, a whole number of bytes from 1 to 2^50, got '16GB'"),
    (index_text(-1), "metadata.total_size"), (index_text(0), "metadata.total_size"),
    (index_text(True), "got True"), (index_text(1.5), "got 1.5"), (index_text(1 << 51), "metadata.total_size"),
    ('{"metadata": {"total_size": Infinity}, "weight_map": {}}', "got inf"),
    (json.dumps({"metadata": {"total_size": 10}, "weight_map": ["a"]}), "weight_map: an object mapping each tensor"),
    (json.dumps({"metadata": {"total_size": 10}, "weight_map": {"a": 1}}), "weight_map: an object mapping each tensor"),
])
def test_a_malformed_index_is_one_line_naming_the_file_and_field(tmp_path, capsys, text, field):
    folder = checkpoint(tmp_path / "model", NEMOTRON, text)
    line = one_line(["size", str(folder)], capsys)
    assert line.startswith(f"mcache: {folder / INDEX}") and field in line, line


def test_an_oversized_index_is_refused_before_it_is_read(tmp_path, capsys, cache):
    folder = checkpoint(tmp_path / "model", NEMOTRON, "")
    with open(folder / INDEX, "wb") as f:
        f.truncate(MAX_INDEX_BYTES + 1)  # sparse: costs no disk
    line = one_line(["size", str(folder)], capsys)
    assert line == f"mcache: {folder / INDEX}: file: a file of at most 64 MiB (mcache reads documents whole; this one is larger)"
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(NEMOTRON), INDEX: "x" * (MAX_INDEX_BYTES + 1)})
    assert "a file of at most 64 MiB" in one_line(["size", REPO], capsys)


def test_online_an_index_the_hub_says_is_too_large_is_not_downloaded(cache, monkeypatch, capsys):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    asked = []

    def download(repo, filename, revision=None, **kwargs):
        asked.append(filename)
        if filename == "config.json":
            return str(lay_out(cache, repo, MAIN, {"config.json": json.dumps(NEMOTRON)}, missing=["hf_quant_config.json"])
                       / filename)
        raise AssertionError(f"downloaded {filename}")

    def metadata(url, **kwargs):
        assert url.endswith(f"/{MAIN}/{INDEX}"), url
        return SimpleNamespace(size=MAX_INDEX_BYTES + 1)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", metadata)
    line = one_line(["size", REPO], capsys)
    assert line == (f"mcache: {REPO}@{MAIN[:12]}/{INDEX}: file: a file of at most 64 MiB (the Hub says it is larger; "
                    "not downloaded)") and asked == ["config.json"]


# --- a bundled spec stands in for its source repo when the Hub cannot answer ---

def test_a_bundled_spec_stands_in_for_its_repo_offline_and_says_so(cache, capsys):
    bundled = load_spec("nemotron-h-8b")
    spec = load_spec(REPO)
    assert spec.layers == bundled.layers and spec.name == bundled.name and stored_bytes(spec) == stored_bytes(bundled)
    assert spec.notes.startswith("Not read from the Hugging Face Hub (HF_HUB_OFFLINE is set and the local cache has no "
                                 "config.json): mcache's bundled spec nemotron-h-8b, whose source is "
                                 f"{REPO}, stands in for it; run once online, or pass the repo's config.json")
    assert resolve(REPO) == resolve("nemotron-h-8b") and load_spec(REPO.lower()).name == bundled.name
    assert load_spec(f"{REPO}@main").name == bundled.name
    assert main(["size", REPO]) == 0 and "notes: Not read from the Hugging Face Hub" in capsys.readouterr().out
    assert main(["import-hf", REPO]) == 0 and "mcache's bundled spec nemotron-h-8b" in capsys.readouterr().out
    # another revision may differ from the bundled spec's (main): the one line, as without a bundled spec
    assert "hub: config.json in the local Hugging Face cache" in one_line(["size", f"{REPO}@v1"], capsys)


def test_the_cache_comes_before_the_bundled_spec(cache):
    older = {**NEMOTRON, "vocab_size": 1000}
    lay_out(cache, REPO, MAIN, {"config.json": json.dumps(older)}, missing=["hf_quant_config.json"])
    spec = load_spec(REPO)
    assert spec.vocab_size == 1000 and "bundled" not in spec.notes and spec.source.startswith(f"{REPO}@{MAIN}")


@pytest.mark.parametrize("raised,stands_in,reason", [
    (lambda: errors.LocalEntryNotFoundError("cannot find the requested files"), True,
     "the Hub did not answer and the local cache has no config.json"),
    (lambda: _http_error(errors.GatedRepoError, 403), True, "the repo is gated"),
    (lambda: _http_error(errors.HfHubHTTPError, 503), True, "the Hub answered HTTP 503"),
    (lambda: _http_error(errors.RepositoryNotFoundError, 404), False, "the Hub has no repo"),
    (lambda: _http_error(errors.RemoteEntryNotFoundError, 404), False, "has no config.json"),
])
def test_the_bundled_spec_stands_in_only_when_the_hub_cannot_answer(cache, monkeypatch, capsys, raised, stands_in,
                                                                    reason):
    """Online: a Hub that does not answer (or a gated repo) lets the bundled spec stand in; a Hub that answers
    that the repo or its config does not exist is believed. The Hub is asked once however often the id is read."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    calls = []

    def download(*args, **kwargs):
        calls.append(args)
        raise raised()

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    if stands_in:
        assert main(["size", REPO]) == 0
        assert f"Not read from the Hugging Face Hub ({reason})" in capsys.readouterr().out
    else:
        assert reason in one_line(["size", REPO], capsys)
    assert len(calls) == 1
