"""Issue 29's budget: no `mcache` command, on any input these tests generate, takes more than 5 s or 1 GiB before it
answers or refuses. Command lines are drawn at random from the commands that read a spec (size with and without an
engine, plan, import-hf, spec validate) and options at the edges of their ranges (huge, zero, negative, non-numeric,
layouts of up to 2^20 GPUs, long lists); each runs in its own process, timed, with its peak memory read from the
kernel (`wait4`'s `ru_maxrss`). It must end with exit 0, 2 or 3 and no traceback."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import HF_CONFIGS, TINY_SPEC

SECONDS = 5.0
PEAK_BYTES = 1 << 30

SPECS = ["nemotron-h-8b", "minimax-text-01", "kimi-linear-48b-a3b", TINY_SPEC, str(HF_CONFIGS / "qwen3-next-80b-a3b.json"),
         str(HF_CONFIGS / "granite-4.0-h-tiny.json")]
HUGE = ["0", "1", "-1", "7", "64", "1048576", "9" * 25, "1e309", "nan", "abc", ""]
SIZES = ["0", "1GiB", "80GB", "1000TiB", "-1GiB", "9" * 30 + "GiB", "x"]
OPTIONS = {
    "size": {"--tp": HUGE, "--pp": HUGE, "--max-seq-len": HUGE, "--context": HUGE, "--concurrency": HUGE,
             "--draft": HUGE, "--max-batch": HUGE, "--block-size": HUGE, "--kv-tokens": HUGE, "--gpu-memory": SIZES,
             "--reserve": SIZES, "--weights": SIZES, "--transfer-to-tp": HUGE, "--transfer-to-pp": HUGE,
             "--gpu": ["h200", "l4", "b200", "nope"], "--kv-dtype": ["fp8", "bfloat16", "int3"],
             "--pp-partition": ["1,1", ",".join(["1"] * 300), "9" * 30 + ",1"]},
    "plan": {"--max-gpus": HUGE, "--context": HUGE, "--draft": [",".join(map(str, range(0, 5000))), "3", "-1"],
             "--kv-dtype": ["fp8,bfloat16", ",".join(["fp8"] * 500)], "--target-concurrency": HUGE, "--top": HUGE,
             "--gpu": ["h200", "h200,b200,l4,a100-80gb", "nope"]},
}
ENGINE_OPTIONS = {"--max-num-seqs": HUGE, "--kv-cache-memory": SIZES, "--max-running-requests": HUGE,
                  "--max-mamba-cache-size": HUGE, "--max-tokens": HUGE}
ENGINE_OF = {"--max-num-seqs": "vllm", "--kv-cache-memory": "vllm", "--max-running-requests": "sglang",
             "--max-mamba-cache-size": "sglang", "--max-tokens": "trtllm"}


@st.composite
def command_lines(draw) -> list[str]:
    command = draw(st.sampled_from(["size", "size-engine", "plan", "import-hf", "spec validate"]))
    spec = draw(st.sampled_from(SPECS))
    if command in ("import-hf", "spec validate"):
        return [*command.split(), spec if command != "import-hf" else str(HF_CONFIGS / "nemotron-h-8b.json")]
    table = OPTIONS["plan" if command == "plan" else "size"]
    chosen = draw(st.lists(st.sampled_from(sorted(table)), max_size=4, unique=True))
    args = ["plan" if command == "plan" else "size", spec]
    for option in chosen:
        args += [option, draw(st.sampled_from(table[option]))]
    if command == "size-engine":
        option = draw(st.sampled_from(sorted(ENGINE_OPTIONS)))
        args += ["--engine", ENGINE_OF[option], option, draw(st.sampled_from(ENGINE_OPTIONS[option]))]
        args += ["--gpu", "h200"] if "--gpu" not in args and "--gpu-memory" not in args else []
    return args


# Runs the command given as its arguments (its stdout to the null device) and prints its exit code, seconds and peak
# resident bytes. It is
# the command's parent so that the command is forked from a small process: a child keeps the resident size it was
# forked with as its peak (ru_maxrss survives exec), and the test process may hold gigabytes by then.
MEASURE = """
import os, subprocess, sys, threading, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
timer = threading.Timer(float(sys.argv[1]), proc.kill)
timer.start()
_, status, usage = os.wait4(proc.pid, 0)
timer.cancel()
print(os.waitstatus_to_exitcode(status), time.perf_counter() - start, usage.ru_maxrss * 1024)
"""


def run_measured(args: list[str], command: list[str] | None = None) -> tuple[int, float, int, str]:
    """Exit code, seconds, peak resident bytes and stderr of `mcache args` (or `command`) in a process of its own,
    killed at four times the budget."""
    argv = command or [sys.executable, "-m", "mcache.cli.main", *args]
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(SECONDS * 4), *argv], capture_output=True, text=True)
    code, seconds, peak = proc.stdout.split()
    return int(code), float(seconds), int(peak), proc.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines())
def test_every_command_answers_within_5_s_and_1_gib(args):
    code, seconds, peak, err = run_measured(args)
    assert code in (0, 2, 3) and "Traceback" not in err, (args, code, err[-2000:])
    assert seconds < SECONDS, (args, seconds)
    assert peak < PEAK_BYTES, (args, peak)


def test_the_measure_sees_a_process_that_goes_over():
    """The budget check can fail: a child that touches 1.2 GiB is seen as over it, one that sleeps past the budget
    as slower than it."""
    touch = "b = bytearray(1_200 << 20); b[::4096] = b'x' * len(b[::4096])"
    assert run_measured([], [sys.executable, "-c", touch])[2] > PEAK_BYTES
    assert run_measured([], [sys.executable, "-c", f"import time; time.sleep({SECONDS + 0.5})"])[1] > SECONDS


def test_the_budget_holds_for_the_slowest_known_search():
    # the misfit hint's layout search over every TP x PP up to 64 for an 80-layer model that fits on none
    code, seconds, peak, err = run_measured(["size", "minimax-text-01", "--gpu-memory", "4GiB"])
    assert code == 3 and seconds < SECONDS and peak < PEAK_BYTES, (seconds, peak, err)

