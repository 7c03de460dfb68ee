"""A misfit under an engine leads somewhere (issue 28): the smallest layout that starts, searched up to TP x PP 64,
and the longest max model length that starts on the asked layout; the headline says when the length is the config's."""

import re

import pytest
from cli_util import one_line

from mcache.core.deployment import Deployment, longest_starting_length, size_deployment
from mcache.core.engines import loaders, newest_version
from mcache.core.load import load_spec
from mcache.core.options import SizeOptions
from mcache.core.sizing.gpus import lookup
from mcache.core.sizing.layout import ParallelLayout


def _fits(spec, d: Deployment, length: int) -> bool:
    options = SizeOptions(max_seq_len=length)
    return bool(size_deployment(spec, Deployment(d.layout, d.gpu, d.engine, options)).fits)


def test_a_length_above_the_config_s_is_answered_with_the_config_s(capsys):
    err = one_line(["size", "nemotron-h-8b", "--engine", "vllm", "--gpu", "h100-80gb", "--max-model-len", "100000"],
                   capsys, 3)
    assert "is greater than the derived max_model_len (8192.0 in model's config.json)" in err
    assert err.endswith("at --tp 1 --pp 1 it starts with --max-model-len 8192 (and a context up to it)")


def test_the_longest_length_is_the_last_that_starts():
    spec = load_spec("qwen3.5-27b")  # SGLang's token pool on one H100 holds less than the config's 262,144 tokens
    d = Deployment(ParallelLayout(), lookup("h100-80gb"), "sglang")
    longest = longest_starting_length(spec, d)
    assert longest is not None and 0 < longest < 262144
    assert _fits(spec, d, longest) and not _fits(spec, d, longest + 1)


def test_weights_that_never_fit_name_no_length(capsys):
    # 104.6 GiB of weights on one rank: the load runs out of memory before any cache (not vLLM's KV-cache check,
    # whose advice, a higher gpu_memory_utilization, could not help)
    err = one_line(["size", "nemotron-h-56b", "--engine", "vllm", "--gpu", "h100-80gb"], capsys, 3)
    assert "torch.OutOfMemoryError: CUDA out of memory while the weights load" in err and "it starts with" not in err
    assert err.endswith("; it fits at --tp 4")
    # room on the GPU for the weights, none for the cache within gpu_memory_utilization 0.2: vLLM's own check
    err = one_line(["size", "nemotron-h-8b", "--engine", "vllm", "--gpu", "h100-80gb", "--gpu-memory-utilization",
                    "0.2"], capsys, 3)
    assert "No available memory for the cache blocks" in err


def test_the_layout_search_goes_past_eight_gpus(capsys):
    # TensorRT-LLM's default max_batch_size of 2048 state slots (870 MiB each at TP 1) needs 16 H100s
    err = one_line(["size", "nemotron-h-56b", "--engine", "trtllm", "--gpu", "h100-80gb"], capsys, 3)
    assert err.endswith("; it fits at --tp 16")


def test_none_fits_names_the_bound_searched(capsys):
    err = one_line(["size", "nemotron-h-56b", "--engine", "vllm", "--gpu-memory", "3GiB"], capsys, 3)
    assert err.endswith("no layout of up to 64 GPUs (TP x PP) fits with these settings")


@pytest.mark.parametrize(("argv", "expected"), [
    (["minimax-text-01", "--engine", "vllm", "--tp", "8"],
     "MiniMax-Text-01 cannot be loaded by vLLM {vllm}: Layer 0 does not dispatch through the Transformers attention "
     "interface and vLLM has no other way to handle it. (MiniMaxForCausalLM was served natively until vLLM 0.23.0.); "
     "it loads on vLLM 0.10.2 to 0.22.0; SGLang 0.5.2 to {sglang}"),
    (["jamba-v0.1", "--engine", "sglang"],
     "Jamba-v0.1 cannot be loaded by SGLang {sglang}: JambaForCausalLM has no SGlang implementation and the "
     "Transformers implementation is not compatible with SGLang; it loads on vLLM"),
    (["granite-4.0-h-tiny", "--engine", "trtllm"],
     "Granite-4.0-H-Tiny cannot be loaded by TensorRT-LLM {trtllm}: Unknown architecture for AutoModelForCausalLM: "
     "GraniteMoeHybridForCausalLM; it loads on vLLM"),
])
def test_an_engine_that_cannot_load_the_model_says_so_and_names_who_can(argv, expected, capsys):
    """No layout or length changes an architecture the engine does not load: its words, then the engines that do."""
    newest = {name: newest_version(name) for name in ("vllm", "sglang", "trtllm")}
    err = one_line(["size", *argv, "--gpu", "h200"], capsys, 3)
    assert err.startswith("mcache: " + expected.format(**newest)), err
    assert "it fits at" not in err and "no layout" not in err


def test_a_release_whose_transformers_does_not_know_the_model_refuses_in_its_words(capsys):
    # vLLM 0.15.0 runs transformers 4.57, which has no qwen3_5, and the checkpoint ships no configuration code: a
    # user's launch stops at AutoConfig (the 0.15.0 golden table); vLLM loads it from 0.17.0, its own Qwen3_5Config
    err = one_line(["size", "qwen3.5-27b", "--engine", "vllm", "--engine-version", "0.15.0", "--gpu", "h200"], capsys, 3)
    assert err.startswith("mcache: Qwen3.5-27B cannot be loaded by vLLM 0.15.0: ValidationError: 1 validation error for "
                          "ModelConfig: Value error, The checkpoint you are trying to load has model type `qwen3_5` but "
                          "Transformers does not recognize this architecture."), err
    assert f"; it loads on vLLM 0.17.0 to {newest_version('vllm')}" in err


def test_the_releases_that_load_a_model_are_listed_per_engine():
    # vLLM served MiniMax natively until 0.23 (0.24.0 is the first modelled release without it)
    assert loaders(load_spec("minimax-text-01"))[0] == "vLLM 0.10.2 to 0.22.0"
    assert loaders(load_spec("nemotron-h-8b"))[0].startswith("vLLM ")
    # SGLang serves it through its Transformers backend at every modelled release, 0.5.2 on
    assert loaders(load_spec("minimax-text-01"))[1] == f"SGLang 0.5.2 to {newest_version('sglang')}"


def test_the_headline_says_when_the_length_is_the_config_s(capsys):
    from mcache.cli.main import main

    assert main(["size", "nemotron-h-8b", "--engine", "vllm", "--gpu", "h200"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"runs \d+ sequences of 8192 tokens \(the model's max length from its config, which vLLM takes "
                     r"by default\)", out)
    assert main(["size", "nemotron-h-8b", "--engine", "vllm", "--gpu", "h200", "--max-model-len", "8192"]) == 0
    assert "from its config" not in capsys.readouterr().out  # given, not taken
