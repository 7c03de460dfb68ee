"""The wheel ships every package and the bundled specs (the package list in pyproject.toml is explicit)."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mcache").rglob("__init__.py")}
    assert found | {"mcache.model_specs"} == listed
