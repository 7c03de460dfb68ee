"""Engine profiles: the estimator's buffer declarations pooled, padded and counted the way vLLM, SGLang and
TensorRT-LLM do it, so `mcache size --engine` gives the figures (and the log lines) that engine will.

One module per engine (`vllm`, `sglang`, `trtllm`), each with `run(inputs) -> EngineRun` and `serve_command(args)
-> str` (what starts that engine on a deployment); `common` holds what they share. Pure arithmetic on the
declarations: no engine package is imported.
"""

from __future__ import annotations

from importlib import import_module

NAMES = ("vllm", "sglang", "trtllm")
TITLES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


def run_engine(name: str, inputs):
    """Run the profile `name` (one of `NAMES`) on `inputs` (an `EngineInputs`)."""
    return import_module(f"{__name__}.{name}").run(inputs)


def serve_command(name: str, args):
    """What starts the engine `name` on the deployment `args` (a `ServeArgs`): its command line, or its options."""
    return import_module(f"{__name__}.{name}").serve_command(args)
