"""Hugging Face Hub ids as a SPEC: `ORG/NAME[@REVISION]` is read from the Hub through `huggingface_hub`, the library
users already configure (its token from `HF_TOKEN` or `hf auth login`, its cache in `HF_HUB_CACHE` / `HF_HOME`,
`HF_HUB_OFFLINE`, `HF_ENDPOINT`). Only `config.json` and, where the repo has them, ModelOpt's `hf_quant_config.json`
and the safetensors index `model.safetensors.index.json` (its stored weight size) are fetched (a `quantization_config`
is inside config.json); they land in the library's cache as a snapshot folder, which is then imported as a checkpoint
folder. Cached files are used offline. `huggingface_hub` is imported only here, when a Hub id is given; every failure
is one line naming the id, and a `HubUnanswered` one (offline, unreachable, gated) lets a bundled spec whose source is
the repo stand in (`load`).
"""

from __future__ import annotations

import contextlib
import re
from functools import lru_cache
from pathlib import Path

from msgspec import Struct

from mcache.core.errors import SpecError

# huggingface_hub's validate_repo_id: `namespace/name`, each of word characters, `-` and `.`, at most 96 characters
# (and no `--` or `..`); a revision after `@` is a branch, tag or commit.
HUB_ID = re.compile(r"(?P<repo>[\w.-]{1,96}/[\w.-]{1,96})(?:@(?P<revision>[\w./-]{1,200}))?")
CONFIG, QUANT = "config.json", "hf_quant_config.json"


class HubUnanswered(SpecError):
    """The Hub could not answer for the repo (offline and not cached, unreachable, gated, a server error), as
    opposed to answering that there is no such repo, revision or file; `reason` says which, in a few words."""

    def __init__(self, file: str, field: str, expected: str, reason: str):
        super().__init__(file, field, expected)
        self.reason = reason


class Snapshot(Struct, frozen=True):
    """What was read for a Hub id: the snapshot folder holding the files, the repo, the revision asked and the
    commit it named, and a note for the spec."""

    folder: Path
    repo_id: str
    revision: str
    commit: str
    note: str

    @property
    def name(self) -> str:
        """The spec's name: the repo's name without its namespace."""
        return self.repo_id.split("/", 1)[1]


def hub_id(ref: str) -> tuple[str, str | None] | None:
    """`(repo id, revision or None)` when `ref` reads as a Hub id (`ORG/NAME[@REVISION]`), else None. A path-like
    reference (`./x/y`, `/x/y`, a spec or config file name, a Windows path) never does."""
    match = HUB_ID.fullmatch(ref)
    if match is None or ref.startswith((".", "-")) or "--" in ref or ".." in match["repo"]:
        return None
    if match["repo"].endswith((".json", ".yaml", ".yml")):
        return None
    return match["repo"], match["revision"]


@contextlib.contextmanager
def _quiet():
    """No progress bars nor warnings from the library: mcache's output is its own."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from huggingface_hub.utils import logging as hub_logging

    bars, level = are_progress_bars_disabled(), hub_logging.get_verbosity()
    disable_progress_bars()
    hub_logging.set_verbosity_error()
    try:
        yield
    finally:
        hub_logging.set_verbosity(level)
        if not bars:
            enable_progress_bars()


def snapshot(ref: str) -> Snapshot:
    """Fetch (or find in the cache) the config files of the Hub id `ref`; a one-line `SpecError` when it cannot (a
    `HubUnanswered` when the Hub could not answer). Asked once per process, failures included: an unreachable Hub
    costs the library's time-outs."""
    outcome = _fetched(ref)
    if isinstance(outcome, SpecError):
        raise outcome
    return outcome


@lru_cache(maxsize=8)
def _fetched(ref: str) -> Snapshot | SpecError:
    try:
        return _fetch(ref)
    except SpecError as err:
        return err


def cache_clear() -> None:
    """Forget what was fetched and whether the Hub's host resolved (tests lay out a new cache or endpoint)."""
    _fetched.cache_clear()
    unresolvable_host.cache_clear()


def _fetch(ref: str) -> Snapshot:
    parsed = hub_id(ref)
    if parsed is None:
        raise SpecError(ref, "hub", "a Hugging Face repo id ORG/NAME[@REVISION]")
    repo, revision = parsed
    try:
        import huggingface_hub  # noqa: F401  (only a Hub id pays for it)
    except ImportError:
        raise HubUnanswered(ref, "hub", "huggingface_hub to read a Hub id (pip install huggingface_hub), or the path of "
                                        "a downloaded config.json", "huggingface_hub is not installed") from None
    from mcache.core.hf.index import INDEX, MAX_INDEX_BYTES

    with _quiet():
        config = _download(ref, repo, CONFIG, revision)
        folder = Path(config).parent
        commit = folder.name  # the cache's snapshots/<commit>/ folder
        quant = _optional(ref, repo, QUANT, commit)
        index = _optional(ref, repo, INDEX, commit, MAX_INDEX_BYTES)
    asked = revision or "main"
    note = f"Read from the Hugging Face Hub: {repo} at {asked} (commit {commit[:12]})"
    note += {True: f", with its {QUANT}.", False: f"; it has no {QUANT}.",
             None: f"; {QUANT} is not in the local cache (offline), so a ModelOpt checkpoint's quantization is unknown: "
                   "run once online to fetch it."}[quant]
    note += {True: "", False: f" It has no {INDEX} (a single-file or non-safetensors checkpoint): no stored size to "
                              "show beside the estimate.",
             None: f" {INDEX} is not in the local cache (offline): no stored size to show beside the estimate."}[index]
    return Snapshot(folder, repo, asked, commit, note)


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


@lru_cache(maxsize=1)
def unresolvable_host() -> str | None:
    """The Hub's host (`HF_ENDPOINT`'s) when it has no address here (no network, no DNS), else None. huggingface_hub
    retries a failed connection five times, 23 s in all, before it looks in its cache: a name that does not resolve
    will not on a retry. Not asked through a proxy, which resolves the name itself."""
    import os
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    url = urlsplit(constants.ENDPOINT)
    try:
        socket.getaddrinfo(url.hostname, url.port or 443)
    except (OSError, UnicodeError):  # socket.gaierror is an OSError
        return url.hostname or constants.ENDPOINT
    return None


def _download(ref: str, repo: str, filename: str, revision: str | None) -> str:
    """The cached path of `filename` in `repo` at `revision` (fetched when online); one line for each failure."""
    from huggingface_hub import constants, errors, hf_hub_download

    offline = constants.is_offline_mode()
    host = None if offline else unresolvable_host()
    try:
        return hf_hub_download(repo, filename, revision=revision, local_files_only=host is not None)
    except errors.GatedRepoError:
        raise HubUnanswered(ref, "hub", "a repo you may read: it is gated; accept its terms on its Hub page, then set "
                                        "HF_TOKEN (or run `hf auth login`)", "the repo is gated") from None
    except errors.RepositoryNotFoundError:
        raise SpecError(ref, "hub", "an existing file or Hugging Face model repo: the Hub has no repo "
                                    f"{repo} (a private one needs HF_TOKEN)") from None
    except errors.RevisionNotFoundError:
        raise SpecError(ref, "revision", f"a branch, tag or commit of {repo}, got {revision!r}") from None
    except errors.LocalEntryNotFoundError:
        if offline:
            raise HubUnanswered(ref, "hub", f"{filename} in the local Hugging Face cache (HF_HUB_OFFLINE is set and it "
                                            "was never downloaded): run once online, or pass a config.json path",
                                f"HF_HUB_OFFLINE is set and the local cache has no {filename}") from None
        if host is not None:
            raise HubUnanswered(ref, "hub", f"a reachable Hub or a cached {filename}: the Hub's host {host} does not "
                                            "resolve here (no network?) and the local cache has no copy; check the "
                                            "network (or HF_ENDPOINT), or pass a config.json path",
                                f"the Hub's host does not resolve and the local cache has no {filename}") from None
        raise HubUnanswered(ref, "hub", f"a reachable Hub or a cached {filename}: the Hub did not answer and the local "
                                        "cache has no copy; check the network (or HF_ENDPOINT), or pass a config.json "
                                        "path", f"the Hub did not answer and the local cache has no {filename}") from None
    except errors.EntryNotFoundError:
        raise SpecError(ref, filename, f"a file of the repo: {repo} at {revision or 'main'} has no {filename} (not a "
                                       "transformers checkpoint?)") from None
    except errors.HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        raise HubUnanswered(ref, "hub", f"an answer from the Hub, got HTTP {status or 'error'}: "
                                        f"{str(err).splitlines()[0][:120]}", f"the Hub answered HTTP {status or 'error'}"
                            ) from None
    except (OSError, ValueError) as err:  # a cache folder that cannot be written, a malformed id
        raise HubUnanswered(ref, "hub", f"{filename} from the Hub ({type(err).__name__}: "
                                        f"{str(err).splitlines()[0][:120] if str(err) else 'no detail'})",
                            f"{filename} could not be fetched ({type(err).__name__})") from None


def _optional(ref: str, repo: str, filename: str, commit: str, limit: int | None = None) -> bool | None:
    """Whether the repo at `commit` has `filename` (fetched into the snapshot folder when it has); None when that is
    not known (offline or unreachable, and the cache has no answer). With `limit`, a file the Hub says is larger is
    refused before it is downloaded (one line); the reader bounds a cached one again."""
    from huggingface_hub import errors, hf_hub_download, try_to_load_from_cache

    cached = try_to_load_from_cache(repo, filename, revision=commit)
    if isinstance(cached, str):
        return True
    if cached is not None:  # the cache records that the repo has no such file
        return False
    if unresolvable_host() is not None:
        return None
    if limit is not None and _remote_size(repo, filename, commit) > limit:
        raise SpecError(f"{repo}@{commit[:12]}/{filename}", "file", f"a file of at most {limit >> 20} MiB (the Hub "
                                                                   "says it is larger; not downloaded)")
    try:
        hf_hub_download(repo, filename, revision=commit)
        return True
    except errors.LocalEntryNotFoundError:
        return None
    except errors.EntryNotFoundError:
        return False
    except (errors.HfHubHTTPError, OSError, ValueError):
        return None


def _remote_size(repo: str, filename: str, commit: str) -> int:
    """The size of `filename` the Hub reports (0 when it reports none or cannot answer: the download that follows
    answers then)."""
    import huggingface_hub

    try:
        size = huggingface_hub.get_hf_file_metadata(huggingface_hub.hf_hub_url(repo, filename, revision=commit)).size
    except Exception:  # noqa: BLE001  (offline, unreachable, no such file: hf_hub_download says which)
        return 0
    return size or 0
