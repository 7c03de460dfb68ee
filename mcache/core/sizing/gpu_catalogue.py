"""The GPU catalogue: each card's total memory as its driver reports it, its memory bandwidth, and where both come from.

Memory is `nvidia-smi`'s `memory.total` (MiB) or `rocm-smi --showmeminfo vram`'s `VRAM Total Memory (B)`: what the
driver lets a program allocate, not the marketing figure (an "80GB" H100 reports 81559 MiB, 79.6 GiB, 85.5 GB).
Bandwidth is the vendor datasheet's peak HBM/GDDR bandwidth in bytes/s. "Public nvidia-smi tables" below means the
table or `--query-gpu` line was found quoted in several public repositories by an exact search for the MiB figure.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20
GB_S = 10**9  # bandwidth: datasheets quote decimal GB/s and TB/s
TB_S = 10**12


NVIDIA, AMD = "nvidia", "amd"  # vendors: CUDA cards, and ROCm (HIP) cards, which engines size by their HIP rules


@dataclass(frozen=True)
class Gpu:
    """One catalogue GPU: `name` as its driver prints it, `memory` (bytes) and `bandwidth` (bytes/s) as above,
    `source` where both figures come from, `aliases`: other names (other driver names among them) for it, and
    `vendor`: whose software stack runs it (`NVIDIA`: CUDA, `AMD`: ROCm)."""

    name: str
    memory: int
    bandwidth: int
    source: str
    aliases: tuple[str, ...] = ()
    vendor: str = NVIDIA


H100_DATASHEET = "NVIDIA H100 Tensor Core GPU datasheet"
MODAL_TOTALS = "nvidia-smi totals listed in modal-labs/modal-client#2797"

# Keyed by the name `--gpu` shows in its list; the first three are `mcache plan`'s default GPUs.
CATALOGUE = {
    "h100-80gb": Gpu("NVIDIA H100 80GB HBM3", 81559 * MIB, int(3.35 * TB_S),
                     f"81559 MiB: nvidia-smi in NVIDIA/nccl#1264 and {MODAL_TOTALS}; 3.35 TB/s: {H100_DATASHEET} (SXM)",
                     ("h100", "h100-sxm", "h100-sxm5")),
    "h200": Gpu("NVIDIA H200", 143771 * MIB, int(4.8 * TB_S),
                "143771 MiB: public nvidia-smi tables; 4.8 TB/s: NVIDIA H200 Tensor Core GPU datasheet (SXM)",
                ("h200-141gb", "h200-sxm")),
    "b200": Gpu("NVIDIA B200", 183359 * MIB, 8 * TB_S,
                "183359 MiB: public nvidia-smi tables (8x B200, driver 570.172.08); "
                "8 TB/s: NVIDIA DGX B200 datasheet (64 TB/s over 8 GPUs)", ("b200-180gb",)),
    "h100-pcie": Gpu("NVIDIA H100 PCIe", 81559 * MIB, 2 * TB_S,
                     f"81559 MiB: public nvidia-smi tables (350 W cards); 2 TB/s: {H100_DATASHEET} (PCIe)"),
    "h100-nvl": Gpu("NVIDIA H100 NVL", 95830 * MIB, int(3.9 * TB_S),
                    f"95830 MiB: nvidia-smi in NVIDIA/gpu-admin-tools#4; 3.9 TB/s: {H100_DATASHEET} (NVL)", ("h100-94gb",)),
    "h20": Gpu("NVIDIA H20", 97871 * MIB, 4 * TB_S,
               "97871 MiB: public nvidia-smi tables (500 W card); 4.0 TB/s: NVIDIA H20 product brief (96 GB HBM3)",
               ("h20-96gb",)),
    "gh200-96gb": Gpu("NVIDIA GH200 480GB", 97871 * MIB, 4 * TB_S,
                      "97871 MiB: public nvidia-smi tables (printed as GH200 480GB or GH200 120GB: the Grace "
                      "memory's size); 4 TB/s: NVIDIA GH200 Grace Hopper Superchip datasheet (96 GB HBM3)",
                      ("gh200", "NVIDIA GH200 120GB")),
    "gh200-144gb": Gpu("NVIDIA GH200 144G HBM3e", 146831 * MIB, int(4.9 * TB_S),
                       "146831 MiB: public nvidia-smi --query-gpu lines (driver 580.173.02); 4.9 TB/s: NVIDIA GH200 "
                       "Grace Hopper Superchip datasheet (144 GB HBM3e)", ("gh200-144g",)),
    "b300": Gpu("NVIDIA B300 SXM6 AC", 275040 * MIB, 8 * TB_S,
                "275040 MiB: public nvidia-smi reports (driver 580.126.09); 8 TB/s: NVIDIA HGX B300 datasheet",
                ("b300-sxm6", "b300-288gb")),
    "gb200": Gpu("NVIDIA GB200", 189471 * MIB, 8 * TB_S,
                 "189471 MiB: public nvidia-smi tables (1200 W); 8 TB/s: NVIDIA GB200 NVL72 datasheet "
                 "(576 TB/s over 72 GPUs)"),
    "gb300": Gpu("NVIDIA GB300", 284208 * MIB, 8 * TB_S,
                 "284208 MiB: public nvidia-smi tables (1400 W); 8 TB/s: NVIDIA GB300 NVL72 datasheet "
                 "(576 TB/s over 72 GPUs; midudev/canirun.ai#20 quotes the same)"),
    "a100-40gb": Gpu("NVIDIA A100-SXM4-40GB", 40960 * MIB, 1555 * GB_S,
                     f"40960 MiB: {MODAL_TOTALS}; 1555 GB/s: NVIDIA A100 Tensor Core GPU datasheet (40GB SXM)"),
    "a100-80gb": Gpu("NVIDIA A100-SXM4-80GB", 81920 * MIB, 2039 * GB_S,
                     f"81920 MiB: {MODAL_TOTALS}; 2039 GB/s: NVIDIA A100 Tensor Core GPU datasheet (80GB SXM)",
                     ("a100",)),
    "l4": Gpu("NVIDIA L4", 23034 * MIB, 300 * GB_S,
              f"23034 MiB: {MODAL_TOTALS}; 300 GB/s: NVIDIA L4 Tensor Core GPU datasheet"),
    "l40": Gpu("NVIDIA L40", 46068 * MIB, 864 * GB_S,
               "46068 MiB: public nvidia-smi tables (300 W); 864 GB/s: NVIDIA L40 GPU datasheet"),
    "l40s": Gpu("NVIDIA L40S", 46068 * MIB, 864 * GB_S,
                f"46068 MiB: {MODAL_TOTALS}; 864 GB/s: NVIDIA L40S GPU datasheet"),
    "a10g": Gpu("NVIDIA A10G", 23028 * MIB, 600 * GB_S,
                "23028 MiB: public nvidia-smi tables (AWS G5, 300 W; modal-labs/modal-client#2797 lists the same for "
                "the A10); 600 GB/s: NVIDIA A10 Tensor Core GPU datasheet (the A10G is AWS's A10)"),
    "rtx-4090": Gpu("NVIDIA GeForce RTX 4090", 24564 * MIB, 1008 * GB_S,
                    "24564 MiB: public nvidia-smi tables; 1008 GB/s: NVIDIA GeForce RTX 4090 specifications",
                    ("4090",)),
    "rtx-5090": Gpu("NVIDIA GeForce RTX 5090", 32607 * MIB, 1792 * GB_S,
                    "32607 MiB: nvidia-smi in noonghunna/club-3090#617; 1792 GB/s: NVIDIA GeForce RTX 5090 "
                    "specifications", ("5090",)),
    "rtx-pro-6000": Gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887 * MIB, 1792 * GB_S,
                        "97887 MiB: public nvidia-smi tables, the same for the Server, Workstation and Max-Q "
                        "Workstation Editions; 1792 GB/s: NVIDIA RTX PRO 6000 Blackwell datasheets",
                        ("rtx-pro-6000-blackwell", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                         "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition")),
    "mi300x": Gpu("AMD Instinct MI300X", 206141652992, int(5.3 * TB_S),
                  "206141652992 B (192 GiB - 16 MiB): rocm-smi --showmeminfo vram in ROCm/legacy-rocm-build#4750; "
                  "5.3 TB/s: AMD Instinct MI300X data sheet", vendor=AMD),
    # No rocm-smi total for the MI325X or MI355X was found: their totals are derived from the MI300X's, which
    # reports its whole HBM (192 GiB) less 16 MiB, so 256 GiB - 16 MiB and 288 GiB - 16 MiB. Check against a card.
    "mi325x": Gpu("AMD Instinct MI325X", (256 << 30) - 16 * MIB, 6 * TB_S,
                  "derived: 256 GiB less the 16 MiB an MI300X's rocm-smi total keeps back; "
                  "6 TB/s: AMD Instinct MI325X data sheet", vendor=AMD),
    "mi355x": Gpu("AMD Instinct MI355X", (288 << 30) - 16 * MIB, 8 * TB_S,
                  "derived: 288 GiB less the 16 MiB an MI300X's rocm-smi total keeps back; "
                  "8 TB/s: AMD Instinct MI355X data sheet", vendor=AMD),
}

# CUDA compute capability by catalogue key (NVIDIA's "CUDA GPU Compute Capability" list): what engines pick kernels by.
# AMD cards have none (None: not a CUDA device).
CAPABILITY: dict[str, tuple[int, int] | None] = {
    "h100-80gb": (9, 0), "h200": (9, 0), "b200": (10, 0), "h100-pcie": (9, 0), "h100-nvl": (9, 0), "h20": (9, 0),
    "gh200-96gb": (9, 0), "gh200-144gb": (9, 0), "b300": (10, 3), "gb200": (10, 0), "gb300": (10, 3),
    "a100-40gb": (8, 0), "a100-80gb": (8, 0), "l4": (8, 9), "l40": (8, 9), "l40s": (8, 9), "a10g": (8, 6),
    "rtx-4090": (8, 9), "rtx-5090": (12, 0), "rtx-pro-6000": (12, 0), "mi300x": None, "mi325x": None, "mi355x": None,
}
