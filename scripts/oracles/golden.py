"""The golden tables' files: tests/data/engine_golden/<engine>-<version>.json.gz, strict JSON (sorted keys, one space
of indent: `zcat` reads them) compressed with gzip, because as plain text the tables (every case's flags, figures and
log lines) took 63 MB for 29 releases, 36 times their compressed size. The oracles write them; their comparers and
the tests read them (each loads this file by path: the oracles keep this folder off sys.path)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "engine_golden"
# The tables over tests/data/hf_configs_extra (real configs the shared fixtures lack), which the oracles write with
# --config-dir / --out; not release tables: `tables` does not look in here unless asked
EXTRA = DIR / "extra"
# The tables over tests/data/hf_configs_indexer (models with a sparse-attention indexer: Qwen3.8-Flash-Next, GLM-5.3-Flash), which
# the SGLang oracle writes with --config-dir / --out, and the vLLM oracle for GLM-5.3-Flash (--configs)
INDEXER = DIR / "indexer"
INDEXER_CONFIGS = DIR.parent / "hf_configs_indexer"
# The tables of DFlash drafters drafting for their targets (tests/data/hf_configs_drafters), written with --drafters
DRAFTERS = DIR / "drafters"
DRAFTER_CONFIGS = DIR.parent / "hf_configs_drafters"  # the drafters' config.json files
# (model config, drafter config) pairs the --drafters tables size: a DFlash drafter drafting for its target
DRAFTER_PAIRS = (("qwen3.5-27b.json", "qwen3.5-27b-dflash.json"), ("qwen3.5-27b.json", "qwen3.6-27b-dflash.json"),
                 ("qwen3.5-27b.json", "qwen3.8-27b-dflash2.json"), ("qwen3.6-35b-a3b.json", "qwen3.6-35b-a3b-dflash.json"))
SUFFIX = ".json.gz"


def path(engine: str, version: str, folder: Path | None = None) -> Path:
    """The table of `engine` (vllm, sglang) at `version`, in `folder` (None: the release tables')."""
    return (folder or DIR) / f"{engine}-{version}{SUFFIX}"


def tables(engine: str, folder: Path = DIR) -> list[Path]:
    """Every table of `engine` in `folder` (the release tables by default), in name order."""
    return sorted(folder.glob(f"{engine}-*{SUFFIX}"))


def read(table: Path) -> dict:
    """A table as its oracle wrote it."""
    with gzip.open(table, "rt", encoding="utf-8") as f:
        return json.load(f)


def write(table: Path, data: dict, default=None) -> None:
    """Write `data` to `table` atomically, byte for byte the same for the same data (no timestamp in the gzip
    header); `default` as `json.dumps` takes it."""
    text = json.dumps(data, sort_keys=True, indent=1, default=default) + "\n"
    tmp = table.with_name(table.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(text.encode())
    tmp.replace(table)
