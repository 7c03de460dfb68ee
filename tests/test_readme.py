"""The README is the user's manual: every console example it shows (that needs no GPU and no file made up in the
text) is the real output of its command, run here (`scripts/readme_examples.py --write` regenerates them)."""

import importlib.util

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
