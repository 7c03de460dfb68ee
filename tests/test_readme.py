"""The README is the user's manual: every console example it shows (that needs no GPU and no file made up in the
text) is the real output of its command, run here (`scripts/readme_examples.py --write` regenerates them)."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import HERE

_spec = importlib.util.spec_from_file_location("readme_examples", HERE.parent / "scripts" / "readme_examples.py")
readme = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme)
EXAMPLES = readme.examples((HERE.parent / "README.md").read_text())


def test_the_readme_has_examples_to_check():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.command[:60] for e in EXAMPLES])
def test_a_readme_example_is_the_command_s_output(example):
    assert readme.mismatch(example, readme.run(example)) is None


def test_the_engines_table_is_regenerated():
    """The README's Engines table is `scripts/engines_table.py`'s output, row for row (its `mcache` the one under test)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    done = subprocess.run([sys.executable, str(HERE.parent / "scripts" / "engines_table.py")], capture_output=True,
                          text=True, env=env, check=True)
    rows = done.stdout.strip().splitlines()
    text = (HERE.parent / "README.md").read_text()
    assert len(rows) == 6 and [row for row in rows if row not in text] == []


def test_the_users_table_is_regenerated():
    """The README's "1,000 users of 32K" table is `scripts/users_table.py`'s output, row for row."""
    done = subprocess.run([sys.executable, str(HERE.parent / "scripts" / "users_table.py")], capture_output=True,
                          text=True, check=True)
    rows = [row for row in done.stdout.splitlines() if row.startswith("| ") and not row.startswith("| model")]
    text = (HERE.parent / "README.md").read_text()
    assert len(rows) == 12 and [row for row in rows if row not in text] == []
