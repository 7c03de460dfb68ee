"""Test setup: without CUDA, Triton kernels run in its interpreter.

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


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
