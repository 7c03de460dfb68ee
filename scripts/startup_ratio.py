"""Start-up cost of `mcache size` against the floor of any typer + rich CLI, measured side by side.

Usage: python scripts/startup_ratio.py [RUNS]   (in the environment where mcache is installed)

Runs `python -c "import typer, rich.console, yaml"` and `mcache size nemotron-h-8b` alternately and
prints both medians and their ratio. Run it with bytecode caching on (PYTHONDONTWRITEBYTECODE unset):
without cached bytecode every start recompiles mcache's modules.
"""

import shutil
import statistics
import subprocess
import sys
import time


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    mcache = shutil.which("mcache")
    if mcache is None:
        sys.exit("startup_ratio: no `mcache` on PATH; install the package first")
    commands = ([sys.executable, "-c", "import typer, rich.console, yaml"], [mcache, "size", "nemotron-h-8b"])
    subprocess.run(commands[1], stdout=subprocess.DEVNULL, check=True)  # warm the bytecode cache
    samples: list[list[float]] = [[], []]
    for _ in range(runs):
        for cmd, out in zip(commands, samples, strict=True):
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            out.append(time.perf_counter() - start)
    floor, size = (statistics.median(s) * 1000 for s in samples)
    print(f"floor (import typer, rich.console, yaml): {floor:.1f} ms; mcache size: {size:.1f} ms; ratio {size / floor:.2f}")


if __name__ == "__main__":
    main()
