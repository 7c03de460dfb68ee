"""The README's console examples, run for real: check them, or rewrite the ones shown whole.

Usage: python scripts/readme_examples.py [--write]   (from the repository root, with mcache installed)

An example is a `$ mcache ...` line in a ```console block (optionally after `cd DIR &&`) and the lines under it up to
the next `$ `. Shown whole, its lines must be the command's output (stdout, then stderr) exactly; with `...` lines
(elided), every other line must be an output line, in order (one ending in `...`: the start of one). `--write`
replaces the output with the real one (of an elided example, the lines it shows). A Hub id is read offline from an
empty Hugging Face cache. Examples that need a GPU, a shell pipeline or files
the repository does not hold (`mcache bench`, `compare` of files made up in the text) are left alone.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A Hub id in an example reads as on a first run without network: offline, with an empty Hugging Face cache (set
# before huggingface_hub is imported, which reads them once; the tests' conftest sets the same).
os.environ["HF_HUB_OFFLINE"] = "1"
if "PYTEST_CURRENT_TEST" not in os.environ and "pytest" not in sys.modules:
    import tempfile

    os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="mcache-readme-hf-")
BLOCK = re.compile(r"```console\n(.*?)```", re.S)
SKIPPED = ("bench", "compare")  # GPU timings; results files the text makes up


class Example:
    """One command of a console block and the output the README shows for it."""

    def __init__(self, command: str, shown: list[str], start: int, end: int):
        self.command, self.shown, self.start, self.end = command, shown, start, end

    @property
    def elided(self) -> bool:
        return any(line == "..." or line.startswith("... ") for line in self.shown)

    @property
    def runnable(self) -> bool:
        """Not a GPU run nor a shell pipeline, and every file it names is in the repository."""
        if re.search(r"[|>]", self.command.split("#")[0]):
            return False
        folder, argv = self.argv
        files = [a for a in argv if a.endswith((".json", ".yaml", ".yml", ".log"))]
        return argv[0] not in SKIPPED and all((ROOT / (folder or "") / f).exists() for f in files)

    @property
    def argv(self) -> tuple[str | None, list[str]]:
        """(the folder it runs in, or None; mcache's arguments)."""
        words = shlex.split(self.command, comments=True)
        folder = None
        if words[0] == "cd":
            folder, words = words[1], words[words.index("&&") + 1:]
        return folder, words[1:]


def examples(text: str) -> list[Example]:
    """Every `$ mcache` example of the README `text`, with its character span (the output lines)."""
    found = []
    for block in BLOCK.finditer(text):
        offset, lines = block.start(1), block.group(1).splitlines(keepends=True)
        current = None
        for line in lines:
            if line.startswith("$ "):
                command = line[2:].strip()
                is_mcache = command.startswith("mcache ") or re.match(r"cd \S+ && mcache ", command)
                current = Example(command, [], offset + len(line), offset + len(line)) if is_mcache else None
                if current is not None:
                    found.append(current)
            elif current is not None:
                current.shown.append(line.rstrip("\n"))
                current.end = offset + len(line)
            offset += len(line)
    return [e for e in found if e.runnable]


def run(example: Example) -> list[str]:
    """The command's stdout then stderr lines, run in-process as a pipe would see them (no terminal)."""
    from mcache.cli.main import main

    folder, argv = example.argv
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT / folder if folder else ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
    finally:
        os.chdir(cwd)
    return (out.getvalue() + err.getvalue()).splitlines()


def mismatch(example: Example, output: list[str]) -> str | None:
    """Why the README's lines are not `output` (None: they are)."""
    if not example.elided:
        return None if example.shown == output else "the output differs"
    at = 0
    for line in (s for s in example.shown if s != "..." and not s.startswith("... ")):
        head = line[:-3].rstrip() if line.endswith("...") else None  # a line cut short: its start
        found = next((i for i in range(at, len(output)) if output[i] == line or head and output[i].startswith(head)), None)
        if found is None:
            return f"no such output line (in order): {line[:120]}"
        at = found + 1
    return None


def refreshed(example: Example, output: list[str]) -> list[str]:
    """The example's lines with the real output: whole, or (elided) each shown line replaced by the output line, after
    the one before it, that shares the longest start with it (cut to the same length where it was cut)."""
    if not example.elided:
        return output
    lines, at = [], 0
    for line in example.shown:
        if line == "..." or line.startswith("... "):
            lines.append(line)
            continue
        start = [len(_common(line, out)) for out in output[at:]]
        if not start:
            lines.append(line)
            continue
        best = at + start.index(max(start))
        cut = line.endswith("...")
        lines.append(output[best][:len(line) - 3].rstrip() + " ..." if cut else output[best])
        at = best + 1
    return lines


def _common(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    write, failed = "--write" in sys.argv, 0
    for example in reversed(examples(text)):
        output = run(example)
        why = mismatch(example, output)
        if why and write:
            text = text[:example.start] + "".join(line + "\n" for line in refreshed(example, output)) + text[example.end:]
        elif why:
            failed += 1
            print(f"{example.command}: {why}")
    if write:
        readme.write_text(text)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
