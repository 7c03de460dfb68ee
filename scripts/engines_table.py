"""The README's Engines table: Nemotron-H-8B on one H200, sequences that run at once in the neutral model and
under each engine (TensorRT-LLM on main and at the 1.2.0 release), at two contexts (4K and 8K: the config allows
8192), with the defaults, without prefix caching and with 3 draft tokens.

Usage: python scripts/engines_table.py [SPEC] [GPU]   (prints Markdown rows)
"""

import json
import subprocess
import sys

VARIANTS = (
    ("defaults", {}),
    ("no prefix caching", {"vllm": ["--no-enable-prefix-caching"], "sglang": ["--disable-radix-cache"]}),
    ("3 draft tokens", {"all": ["--draft", "3"]}),
)


def size(spec: str, gpu: str, *args: str) -> dict:
    done = subprocess.run(["mcache", "size", spec, "--gpu", gpu, "--format", "json", *args], capture_output=True, text=True)
    return json.loads(done.stdout)


def main() -> None:
    spec = sys.argv[1] if len(sys.argv) > 1 else "nemotron-h-8b"
    gpu = sys.argv[2] if len(sys.argv) > 2 else "h200"
    for context in (4096, 8192):
        for label, extra in VARIANTS:
            common = ["--max-seq-len", str(context), *extra.get("all", [])]
            cells = [str(size(spec, gpu, *common)["capacity"]["ranks"][0]["max_sequences"])]
            for engine, version in (("vllm", []), ("sglang", []), ("trtllm", []), ("trtllm", ["--engine-version", "1.2.0"])):
                args = ["--engine", engine, *version, *common, *extra.get(engine, [])]
                stage = size(spec, gpu, *args)["engine"]["stages"][0]
                running = f"{stage['max_running_requests']} ({stage['binding']})"
                cells.append("does not start" if stage["startup_error"] else running)
            print(f"| {context} | {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
