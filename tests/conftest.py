"""Test setup: without CUDA, Triton kernels run in its interpreter; the Hugging Face Hub is offline.

TRITON_INTERPRET must be set before any kernel module is imported (Triton reads it when each kernel is
decorated), so it is set here, at collection time, ahead of every test module.
"""

import os

import pytest


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


if not _has_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# No test reaches the Hugging Face Hub (CI has no network): a Hub id is read from an empty cache, offline, unless a
# test lays out its own (tests/test_hub.py). Set before huggingface_hub is imported, which reads them once.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_CACHE"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"mcache-tests-hf-{os.getpid()}")


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
