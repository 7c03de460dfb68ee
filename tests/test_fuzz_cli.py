"""Fuzz the CLI with mutated inputs: the bundled specs, the HF configs of the tests and a results file, each with
one field deleted, nulled, retyped or set to an absurd value (or the file cut short), run in-process through
`size`, `spec validate`, `import-hf`, `compare` and `export`.

Every run must end with an exit code of 0-3 (or 130), no traceback, strict JSON from `--format json` (no NaN or
Infinity) and an error of at most a few lines. A fixed seed makes a failure reproducible: the message names the
file, the mutation and the command.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import yaml
from paths import HERE, HF_CONFIGS, HF_CONFIGS_INDEXER

from mcache.cli.main import main

SEED = 21
CASES = 1500  # about 25 s on a 2-core machine
DEADLINE_S = 50  # a slow machine stops early rather than run past a minute
MAX_ERROR_LINES = 3
HUGE_INT = "9" * 5000  # past Python's 4300-digit int parsing limit
TOO_BIG_FLOAT = "1e400"  # parses to infinity

SPECS = sorted((HERE.parent / "model_specs").glob("*.yaml"))
CONFIGS = sorted(HF_CONFIGS.glob("*.json")) + sorted(HF_CONFIGS_INDEXER.glob("*.json"))
RESULTS = HERE.parent / "results" / "nemotron-h-8b-replay-h200-2026-12-02.json"
# Literals that JSON and YAML cannot carry through `json.dumps`: placeholders replaced in the text.
RAW = {"@@huge@@": HUGE_INT, "@@inf@@": TOO_BIG_FLOAT}
VALUES = [None, True, "x", -1, 0, "@@inf@@", "@@huge@@", [[[[1]]]], 2**63, 1e308, 1.5, ""]


def _paths(node, prefix=()):
    """Every path (tuple of keys and indices) into a nested document."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:8]):
            yield from _paths(value, (*prefix, i))


def _swap(value):
    """The same content in another type: a mapping as a list, a list as a mapping, a scalar as a string or list."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    return [value] if isinstance(value, str) else str(value)


def _at(data, path):
    for key in path:
        data = data[key]
    return data


def mutate(data, rng: random.Random) -> tuple[object, str]:
    """`data` with one random change, and a description of it; one time in three the change is made in every
    item of the list the field is in (every row's `median_us`, every layer entry)."""
    path = rng.choice([p for p in _paths(data) if p])
    action = rng.choice(["delete", "set", "set", "swap"])
    new = rng.choice(VALUES)
    lists = [i for i, key in enumerate(path) if isinstance(key, int)]
    every = bool(lists) and rng.random() < 1 / 3
    targets = [path]
    if every:
        at = lists[-1]
        siblings = len(_at(data, path[:at]))
        targets = [(*path[:at], i, *path[at + 1:]) for i in range(siblings)]
    for target in targets:
        try:
            parent, key = _at(data, target[:-1]), target[-1]
            if action == "delete":
                del parent[key]
            else:
                parent[key] = _swap(parent[key]) if action == "swap" else new
        except (KeyError, IndexError, TypeError):  # an item without the field, or a shorter list
            continue
    return data, f"{action} {path}{' in every item' if every else ''}" + (f" = {new!r}" if action == "set" else "")


def render(data, suffix: str) -> str:
    text = json.dumps(data, indent=1) if suffix == ".json" else yaml.safe_dump(data, sort_keys=False)
    for placeholder, literal in RAW.items():
        text = text.replace(f"'{placeholder}'", literal).replace(f'"{placeholder}"', literal)
    return text


def commands(kind: str, path: str) -> list[list[str]]:
    if kind == "spec":
        return [["size", path, "--format", "json"], ["size", path, "--gpu", "h200"], ["spec", "validate", path]]
    if kind == "config":
        return [["import-hf", path], ["size", path, "--format", "json"]]
    return [["compare", str(RESULTS), path, "--format", "json"], ["export", path, "--to", "bencher"],
            ["export", path, "--to", "github-action-benchmark"]]


def _reject_constant(name: str):
    raise ValueError(f"not strict JSON: {name}")


def check(argv: list[str], capsys) -> str | None:
    """Run one command; what is wrong with how it ended, or None."""
    try:
        code = main(argv)
    except BaseException as err:  # noqa: BLE001 - anything escaping main is the failure being looked for
        capsys.readouterr()
        return f"{type(err).__name__} escaped main: {err!s:.200}"
    out, err = capsys.readouterr()
    if "Traceback" in out + err:
        return f"traceback: {err[-300:]}"
    if code not in (0, 1, 2, 3, 130):
        return f"exit code {code}"
    if code and len(err.strip().splitlines()) > MAX_ERROR_LINES:
        return f"error of {len(err.strip().splitlines())} lines: {err[:300]}"
    if code == 0 and ("json" in argv or argv[0] == "export"):
        try:
            json.loads(out, parse_constant=_reject_constant)
        except ValueError as bad:
            return f"output is not strict JSON: {bad!s:.200}"
    return None


def cases(rng: random.Random):
    """(kind, source file, mutated text, description) for ever."""
    sources = {"spec": SPECS, "config": CONFIGS, "results": [RESULTS]}
    while True:
        kind = rng.choice(list(sources))
        source = rng.choice(sources[kind])
        text = source.read_text()
        if rng.random() < 0.1:
            cut = rng.randrange(len(text))
            yield kind, source, text[:cut], f"truncated at {cut}"
            continue
        data = json.loads(text) if source.suffix == ".json" else yaml.safe_load(text)
        mutated, what = mutate(data, rng)
        yield kind, source, render(mutated, source.suffix), what


def test_mutated_inputs_never_crash_the_cli(tmp_path: Path, capsys):
    rng = random.Random(SEED)
    start, failures, runs = time.monotonic(), [], 0
    for n, (kind, source, text, what) in enumerate(cases(rng)):
        if n >= CASES or time.monotonic() - start > DEADLINE_S:
            break
        target = tmp_path / f"case{n}{source.suffix}"
        target.write_text(text)
        for argv in commands(kind, str(target)):
            runs += 1
            problem = check(argv, capsys)
            if problem:
                failures.append(f"{source.name}: {what}: mcache {' '.join(argv[:1])}: {problem}")
    assert runs > 100, "the fuzz ran too few commands to mean anything"
    assert not failures, f"{len(failures)} of {runs} runs failed:\n" + "\n".join(failures[:30])
