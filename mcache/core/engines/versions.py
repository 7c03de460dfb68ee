"""Which modelled release of an engine answers for the version a user runs (`--engine-version`).

Each engine module lists the releases its rules were checked at (`VERSIONS`, oldest first); a rule that changed
between them tests the run's version with `at_least` and cites the engine's source at the versions on each side.
A version between two modelled ones takes the older one (its rules held until the newer one changed them) and says
so; a version past the newest takes the newest with a note; one before the oldest is refused (its rules are not
modelled). A development branch (`main@<commit>`) comes after every release and is asked for as `main`."""

from __future__ import annotations

import re

from msgspec import Struct

from mcache.core.errors import LayoutError

_RELEASE = re.compile(r"v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(?:\.(\d{1,4}))?(?:rc\d{1,4}|\.?post(\d{1,4}))?"
                      r"(?:\.?dev\d{1,8}(?:\+\S*)?)?")
_BRANCH = (1 << 30,)  # a development branch sorts after every release


class EngineVersion(Struct, frozen=True):
    """The release whose rules size a run (`modelled`), the version the user asked for (None: the newest modelled),
    and what a user reads when the two differ (`note`)."""

    modelled: str
    requested: str | None = None
    note: str | None = None


def key(version: str) -> tuple[int, ...]:
    """A sortable key of `0.33`, `0.33.0`, `v0.10.2`, `1.2.0rc3`, `0.5.4.post1`, `0.10.1.1`, `0.20.1rc1.dev91+g…` or
    `main@<commit>`: (major, minor, patch, post). A release candidate or a development build counts as the release it
    names (the modelled rules hold for its line, as the public boots of vLLM `0.20.1rc1.dev91` and `0.10.2.dev756`
    show, each sized by its release's rules in `mcache explain`, which reads a log's version the same way; an earlier
    build may predate some of them, as `0.20.1rc1.dev23` logs its KV size as 0.20.0 does: its boot names 0.20.0); a post
    release comes after its release and before the next (SGLang cuts some from its main branch: 0.5.4.post1 runs
    rules of 0.5.5 already), as does a fourth number (vLLM's 0.10.1.1, a fix of 0.10.1). A `LayoutError` naming
    `--engine-version` otherwise."""
    if version == "main" or version.startswith("main@"):
        return _BRANCH
    found = _RELEASE.fullmatch(version.strip())
    if found is None:
        raise LayoutError("engine_version", f"a release such as 0.33.0 or 1.2 (or main), got {version!r}")
    major, minor, patch, fix, post = found.groups()
    return int(major), int(minor), int(patch or 0), int(post or fix or 0)


def at_least(version: str, floor: str) -> bool:
    """Whether the modelled `version` is `floor` or later (a rule that holds from `floor` on)."""
    return key(version) >= key(floor)


def resolve(title: str, versions: tuple[str, ...], requested: str | None) -> EngineVersion:
    """The modelled release of engine `title` (`versions`: oldest first) for the `requested` version."""
    newest = versions[-1]
    if requested is None:
        return EngineVersion(newest)
    asked = key(requested)
    exact = next((v for v in versions if key(v) == asked), None)
    if exact is not None and exact != requested and requested.startswith("main@"):  # the branch at another commit
        return EngineVersion(exact, requested, f"{title} {requested} is sized as {exact}, the commit of the branch mcache "
                                               "models")
    if exact is not None:
        return EngineVersion(exact, requested)
    if asked < key(versions[0]):
        raise LayoutError("engine_version", f"{title} {versions[0]} or later (the releases mcache models: "
                                            f"{', '.join(versions)}), got {requested}")
    if asked > key(newest):
        return EngineVersion(newest, requested, f"{title} {requested} is newer than the newest release mcache models; "
                                                f"sized as {newest}")
    older = max((v for v in versions if key(v) < asked), key=key)
    return EngineVersion(older, requested, f"{title} {requested} is sized by the rules of {older}, the newest modelled "
                                           "release before it")
