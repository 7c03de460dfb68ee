"""Load a model spec from a YAML file or a bundled name, with errors that name file, field and line."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import msgspec.structs
import yaml

from mcache.core.errors import SpecError, validation_parts
from mcache.core.files import read_document
from mcache.core.numbers import SpecLoader, first_refused
from mcache.core.spec.model import ModelSpec, check_spec

if TYPE_CHECKING:
    from mcache.core.hub import Snapshot

MAX_NODES = 100_000  # values of a spec once its aliases are expanded: a real spec has a few hundred


def bundled_dir() -> Path:
    """Folder of the specs shipped with the package (`mcache/model_specs` in a wheel, the
    top-level `model_specs/` in a source checkout)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "model_specs"
    return installed if installed.is_dir() else package.parent / "model_specs"


def bundled_names() -> list[str]:
    """Names of the bundled specs (file stems), sorted."""
    return sorted(p.stem for p in bundled_dir().glob("*.yaml"))


def resolve(ref: str) -> Path:
    """A path as given if it exists; else a bare name is the bundled spec of that exact name (an unknown one suggests
    the closest bundled ones; the same name in other case alone: a name in a script must mean one file), and
    `ORG/NAME[@REVISION]` a Hugging Face Hub id, whose config files are fetched into the library's cache (`hub`): the
    snapshot folder is returned, or the bundled spec that stands in for the repo when the Hub cannot answer."""
    path = Path(ref)
    if path.exists():
        return path
    hub = hub_source(ref)
    if hub is not None:
        return hub.path
    names = bundled_names()
    if "/" in ref or ref.endswith((".yaml", ".yml", ".json")):
        raise SpecError(ref, "file", "an existing file, or a Hugging Face repo id ORG/NAME[@REVISION] (no such file)")
    if ref in names:
        return bundled_dir() / f"{ref}.yaml"
    starts = [name for name in names if name.startswith(ref.lower())]
    close = list(dict.fromkeys(starts + difflib.get_close_matches(ref.lower(), names, n=3, cutoff=0.5)))[:3]
    if ref.lower() in names:
        close = [ref.lower()]
    hint = f"did you mean {', '.join(close[:-1])} or {close[-1]}?" if len(close) > 1 else (
        f"did you mean {close[0]}?" if close else "see `mcache spec list`")
    raise SpecError(ref, "file", f"an existing file or a bundled spec name; {hint}")


class HubSource(NamedTuple):
    """What a Hub id reads: the snapshot folder (`snapshot`), or, when the Hub cannot answer, the bundled spec whose
    source is the repo (`snapshot` None) with the note that says so."""

    path: Path
    snapshot: Snapshot | None
    note: str = ""


def hub_source(ref: str) -> HubSource | None:
    """Where the Hub id `ref` is read from; None when `ref` is a path that exists or no Hub id (a bare name never
    goes to the Hub). The cache or the Hub first; a bundled spec stands in only when the Hub could not answer
    (offline and not cached, unreachable, gated, without huggingface_hub), never when it answered that the repo,
    revision or config file does not exist."""
    if "/" not in ref or Path(ref).exists():
        return None
    from mcache.core.hub import HubUnanswered, hub_id, snapshot

    parsed = hub_id(ref)
    if parsed is None:
        return None
    try:
        found = snapshot(ref)
    except HubUnanswered as err:
        stand_in = bundled_for(*parsed)
        if stand_in is None:
            raise
        note = (f"Not read from the Hugging Face Hub ({err.reason}): mcache's bundled spec {stand_in.stem}, whose "
                f"source is {parsed[0]}, stands in for it; run once online, or pass the repo's config.json, to read "
                "the repo itself.")
        return HubSource(stand_in, None, note)
    return HubSource(found.folder, found)


# A bundled spec's source, `https://huggingface.co/ORG/NAME/blob/REVISION/config.json`: its repo and revision.
_HUB_SOURCE = re.compile(r"^source:\s*['\"]?https://huggingface\.co/([\w.-]+/[\w.-]+)(?:/(?:blob|resolve|tree)/([\w.-]+))?",
                         re.M)


def bundled_for(repo: str, revision: str | None) -> Path | None:
    """The bundled spec whose `source` is the Hub repo `repo` (the Hub's repo ids are case-insensitive) at `revision`
    (None: the default branch, `main`); None when no bundled spec names it."""
    for path in sorted(bundled_dir().glob("*.yaml")):
        found = _HUB_SOURCE.search(read_document(path))
        if found and found[1].casefold() == repo.casefold() and (revision or "main") == (found[2] or "main"):
            return path
    return None


def load_spec(ref: str) -> ModelSpec:
    """Load a spec by path, bundled name or Hub id; HF `config.json` files, checkpoint folders and Hub snapshots are
    imported."""
    hub = hub_source(ref)
    if hub is not None and hub.snapshot is None:
        return _stand_in(hub)
    path = hub.path if hub else resolve(ref)
    if path.is_dir() or path.suffix == ".json":
        return import_config(ref)
    return parse_spec(read_document(path), str(path))


def with_drafter(spec: ModelSpec, ref: str | None) -> ModelSpec:
    """`spec` drafting with the DFlash drafter whose config `ref` names (a `config.json`, a folder holding one, or a Hub
    id), or as it is without `ref`. A drafter the spec already has is replaced."""
    if ref is None:
        return spec
    from mcache.core.hf.drafter import read_drafter  # only drafter users pay for it

    hub = hub_source(ref)
    if hub is not None and hub.snapshot is None:
        raise SpecError(ref, "draft_model", f"a drafter's config.json or folder, or a Hub id the Hub answers ({hub.note})")
    path = hub.path if hub else Path(ref)
    if not path.exists():
        raise SpecError(ref, "draft_model", "an existing config.json, a folder holding one, or a Hub id ORG/NAME")
    return msgspec.structs.replace(spec, drafter=msgspec.structs.replace(read_drafter(path), source=ref))


def _stand_in(hub: HubSource) -> ModelSpec:
    spec = parse_spec(read_document(hub.path), str(hub.path))
    return msgspec.structs.replace(spec, notes=f"{hub.note} {spec.notes}".strip())


def import_config(ref: str) -> ModelSpec:
    """The spec of an HF config given as `ref`: a `config.json`, a checkpoint folder (a path that exists wins), or
    a Hub id, named by its repo and with a note on what was read (or the bundled spec standing in for the repo)."""
    from mcache.core.hf import import_hf  # only HF users pay for it

    hub = hub_source(ref)
    if hub is not None and hub.snapshot is None:
        return _stand_in(hub)
    if hub is not None:
        snap = hub.snapshot
        spec = import_hf(snap.folder, name=snap.name, origin=f"{snap.repo_id}@{snap.commit}")
        return msgspec.structs.replace(spec, notes=f"{spec.notes} {snap.note}".strip())
    return import_hf(ref)


def parse_spec(text: str, file: str) -> ModelSpec:
    """Parse and validate spec YAML text; `file` names it in errors."""
    try:
        data = _load_yaml(text, file)
    except yaml.reader.ReaderError as err:  # a character YAML does not allow, such as NUL: where it stands
        raise SpecError(file, "yaml", f"valid YAML ({err.reason}: U+{err.character:04X})",
                        text.count("\n", 0, err.position) + 1) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or "valid YAML"
        raise SpecError(file, "yaml", f"valid YAML ({problem})", mark.line + 1 if mark else None) from None
    except ValueError as err:  # a literal Python will not convert, such as an integer of over 4300 digits
        raise SpecError(file, "yaml", f"values Python can read ({str(err).split(';')[0]})") from None
    if data is None:
        raise SpecError(file, "document", "a mapping of spec fields, got an empty file")
    if not isinstance(data, dict):
        raise SpecError(file, "document", f"a mapping of spec fields, got {type(data).__name__}")
    refused = first_refused(data)
    if refused:
        raise SpecError(file, refused[0], refused[1].expected, line_of(text, refused[0]))
    try:
        spec = msgspec.convert(data, ModelSpec)
    except msgspec.ValidationError as err:
        path, reason = validation_parts(str(err))
        field = path or "document"
        unknown = re.match(r"Object contains unknown field `(.+)`", reason)
        if unknown:
            field = f"{path}.{unknown.group(1)}" if path else unknown.group(1)
            reason = "a known field (see `mcache spec schema`)"
        missing = re.match(r"Object missing required field `(.+)`", reason)
        if missing:
            field = f"{path}.{missing.group(1)}" if path else missing.group(1)
            reason = "a required field, missing"
        raise SpecError(file, field, reason, line_of(text, field)) from None
    try:
        check_spec(spec, file)
    except SpecError as err:  # semantic checks see no YAML nodes: add the line here
        raise SpecError(err.file, err.field, err.expected, err.line or line_of(text, err.field)) from None
    return spec


def _load_yaml(text: str, file: str):
    """The YAML document in `text`, built only once its node graph is known to be finite and small: an alias that
    refers to the node it is in is refused, and so are aliases that expand the document past `MAX_NODES` nodes
    (nine levels of ten aliases each build a billion)."""
    loader = SpecLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            size = expanded_size(node)
            if size is None:
                raise SpecError(file, "yaml", "a document without recursive aliases (an alias refers to a node it is in)")
            if size > MAX_NODES:
                raise SpecError(file, "yaml", f"a document of at most {MAX_NODES:,} values once its aliases are expanded")
            if (again := _repeated_key(node)) is not None:  # YAML would keep the last silently
                raise SpecError(file, again[0], f"a key given once in its mapping (given again on line {again[1]})",
                                again[1])
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def _repeated_key(root: yaml.Node) -> tuple[str, int] | None:
    """The first key a mapping under `root` gives twice and the line of its second time (None: none); merge keys
    (`<<`) aside. Walks without recursion, each node once."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in keys:
                        return key.value, key.start_mark.line + 1
                    keys.add(key.value)
                stack += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return None


def expanded_size(root: yaml.Node) -> int | None:
    """How many nodes the document under `root` has once every alias is expanded (counting stops just past
    `MAX_NODES`), or None when an alias refers to a node it is in. Walks without recursion, each node once."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else (
            node.value if isinstance(node, yaml.SequenceNode) else [])
        if closing:
            open_nodes.discard(key)
            sizes[key] = min(MAX_NODES + 1, 1 + sum(sizes[id(child)] for child in children))
        elif key in open_nodes:
            return None  # reached again before it was closed: one of its own descendants
        elif key not in sizes:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return sizes[id(root)]


def line_of(text: str, field: str) -> int | None:
    """1-based line of a dotted YAML path like `mamba2.num_heads` or `layers.types[3]`, if found."""
    try:
        node = yaml.compose(text, Loader=SpecLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        if node is None:
            break
        line = node.start_mark.line + 1
        if part.startswith("["):
            index = int(part[1:-1])
            items = node.value if isinstance(node, yaml.SequenceNode) else []
            node = items[index] if index < len(items) else None
        elif isinstance(node, yaml.MappingNode):
            node = next((v if v is not None else k for k, v in node.value if k.value == part), None)
            if node is None:
                return line
        else:
            node = None
    return node.start_mark.line + 1 if node is not None else line
