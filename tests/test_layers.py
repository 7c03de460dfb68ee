"""The house's rules (CONTRIBUTING.md): the pure packages never load torch, triton or numpy; no module imports a
higher layer; no import cycles. Read from the code's own imports, lazy ones included."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mcache

ROOT = Path(mcache.__file__).parent
PURE = ("core", "results")
HEAVY = ("torch", "triton", "numpy")
# What each top-level package may import (besides itself): the torch side cli -> bench -> cache -> kernels, and
# the pure side results -> core under everything.
MAY_IMPORT = {
    "core": set(),
    "results": {"core"},
    "kernels": {"core"},
    "cache": {"kernels", "core"},
    "bench": {"cache", "kernels", "core", "results"},
    "cli": {"bench", "cache", "kernels", "core", "results"},
}
# Inside core, floors from the ground up: a module imports its own floor's package or lower floors only.
CORE_FLOORS = {"errors": 0, "numbers": 0, "files": 0, "options": 0, "kinds": 1, "spec": 2, "sizing": 3, "engines": 4, "hf": 4}
CORE_TOP = 5  # load, deployment, report, plan, transfer_plan: what the commands call


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path) -> set[str]:
    """The mcache modules `name` imports anywhere in its file (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m == "mcache" or m.startswith("mcache.")}


MODULES = _modules()
GRAPH = {name: {m for m in _imports(name, path) if m in MODULES and m != name} for name, path in MODULES.items()}


def _package(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def _core_floor(name: str) -> int:
    part = name.split(".")[2] if name.count(".") >= 2 else ""
    return CORE_FLOORS.get(part, CORE_TOP)


def test_pure_packages_never_load_torch_triton_or_numpy():
    pure = sorted(m for m in MODULES if _package(m) in PURE)
    code = ("import importlib, sys\n"
            f"for m in {pure!r}:\n    importlib.import_module(m)\n"
            f"print(' '.join(sorted(h for h in {HEAVY!r} if h in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert len(pure) > 40
    assert out == "", f"importing mcache.core and mcache.results loaded {out}"


def test_no_module_imports_a_higher_layer():
    upward = []
    for name, targets in GRAPH.items():
        pkg = _package(name)
        for target in targets:
            other = _package(target)
            if pkg is None or other is None or other == pkg:
                if pkg == other == "core" and _core_floor(target) > _core_floor(name):
                    upward.append(f"{name} -> {target}")
                continue
            if other not in MAY_IMPORT.get(pkg, set()):
                upward.append(f"{name} -> {target}")
    assert not upward, "imports of a higher layer:\n" + "\n".join(sorted(upward))


def test_core_floors_hold_one_package_each():
    """Two packages on one floor of core (engines, hf) never import each other."""
    crossing = [f"{n} -> {t}" for n, ts in GRAPH.items() for t in ts if _package(n) == _package(t) == "core"
                and _core_floor(n) == _core_floor(t) < CORE_TOP and n.split(".")[2] != t.split(".")[2]
                and _core_floor(n) > 0]
    assert not crossing, "\n".join(crossing)


def test_no_import_cycles():
    """Depth-first search for a back edge; a package's __init__ counts as the package."""
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(GRAPH[node]):
            if nxt.startswith(node + "."):
                continue  # a package's face handing on its own modules is no cycle
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(trail[trail.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
