"""The GPU catalogue: names in every form people and drivers give them, near misses, and every entry's figures."""

import pytest

from mcache.cli.main import main
from mcache.core.errors import LayoutError
from mcache.core.sizing.gpu_catalogue import AMD, CATALOGUE, MIB, NVIDIA
from mcache.core.sizing.gpus import find_gpu, lookup, vendor

KEYS = ", ".join(CATALOGUE)


@pytest.mark.parametrize("name", ["h200", "H200", "h200-141gb", "NVIDIA H200", "nvidia_h200", " h200 "])
def test_name_forms_resolve(name):
    assert lookup(name) == ("NVIDIA H200", 143771 * MIB)


@pytest.mark.parametrize(("printed", "key"), [
    ("NVIDIA H100 80GB HBM3", "h100-80gb"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA B300 SXM6 AC", "b300"), ("NVIDIA GB200", "gb200"),
    ("NVIDIA GH200 480GB", "gh200-96gb"), ("NVIDIA GH200 120GB", "gh200-96gb"), ("NVIDIA GH200 144G HBM3e", "gh200-144gb"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000"), ("NVIDIA A10G", "a10g"),
    ("AMD Instinct MI300X", "mi300x"), ("AMD Instinct MI355X", "mi355x"), ("GeForce RTX 4090", "rtx-4090"),
])
def test_driver_names_resolve(printed, key):
    assert find_gpu(printed) == CATALOGUE[key]


def test_every_name_of_an_entry_is_its_own():
    """No alias or driver name of one entry is read as another's."""
    for key, gpu in CATALOGUE.items():
        for name in (key, gpu.name, *gpu.aliases):
            assert find_gpu(name) is gpu, (key, name)


@pytest.mark.parametrize(("key", "mib"), [("h100-80gb", 81559), ("b200", 183359), ("b300", 275040), ("gb200", 189471),
                                          ("gb300", 284208), ("h20", 97871), ("rtx-5090", 32607), ("l4", 23034)])
def test_memory_is_what_the_driver_reports(key, mib):
    assert CATALOGUE[key].memory == mib * MIB


@pytest.mark.parametrize("key", list(CATALOGUE))
def test_every_entry_has_memory_bandwidth_and_source(key):
    gpu = CATALOGUE[key]
    assert 16 << 30 < gpu.memory < 320 << 30
    assert 100 * 10**9 <= gpu.bandwidth <= 10 * 10**12
    cited = (f"{gpu.memory // MIB} MiB", f"{gpu.memory} B", "derived")  # the source quotes the figure, or says how
    assert any(text in gpu.source for text in cited) and "/s" in gpu.source


def test_near_miss_suggests_the_closest():
    with pytest.raises(LayoutError) as info:
        lookup("h300")
    assert str(info.value) == f"gpu: one of {KEYS}, got 'h300' (or give --gpu-memory); did you mean h200?"
    with pytest.raises(LayoutError, match="did you mean mi355x[?]$"):
        lookup("AMD Instinct MI350X")


def test_wrong_name_is_one_exact_line(capsys):
    assert main(["size", "nemotron-h-8b", "--gpu", "tpu"]) == 2
    assert capsys.readouterr().err == f"mcache: --gpu: one of {KEYS}, got 'tpu' (or give --gpu-memory)\n"


def test_new_catalogue_gpu_sizes(capsys):
    assert main(["size", "nemotron-h-8b", "--gpu", "NVIDIA GeForce RTX 5090", "--format", "json"]) == 0
    assert "NVIDIA GeForce RTX 5090" in capsys.readouterr().out


def test_vendor_from_the_catalogue():
    assert [vendor(n) for n in ("mi300x", "AMD Instinct MI325X", "MI355X")] == [AMD] * 3
    assert [vendor(n) for n in ("h200", "NVIDIA B200", "rtx-5090")] == [NVIDIA] * 3
    assert vendor(None) is None and vendor("a GPU nobody sells") is None
