"""Parameter counts of transformers' own model classes for the configs in tests/data/hf_configs, beside mcache's.

    python scripts/param_counts.py            # count (needs transformers + torch), write the table, the README section
    python scripts/param_counts.py --readme   # only redraw the README section from the committed table (mcache only)

Counting builds each config's causal-LM class with `from_config` on the meta device (no memory, no download, no
remote code) and sums `model.parameters()` (tied tensors once). A multimodal config (one with a `vision_config`)
builds its image-text-to-text class, the whole model with its vision tower, as mcache weighs it. Configs
transformers cannot build (remote-code model types, mamba_ssm library configs) are listed with the reason. Set it up
in a throwaway venv, as the engine oracles are:

    python3 -m venv /tmp/tf && /tmp/tf/bin/pip install "torch==2.13.0" msgspec pyyaml
    /tmp/tf/bin/pip install --no-deps "transformers==5.23.0"
    /tmp/tf/bin/pip install huggingface_hub numpy packaging regex "tokenizers<0.24,>=0.23.1" typer "safetensors>=0.8" tqdm
    HF_HUB_OFFLINE=1 PYTHONPATH=. /tmp/tf/bin/python scripts/param_counts.py

The table (tests/data/param_counts.json) is what tests/test_param_counts.py compares mcache's estimate with; CI only
reads it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"
TABLE = ROOT / "tests" / "data" / "param_counts.json"
README = ROOT / "README.md"
START, END = "<!-- param-counts:start -->", "<!-- param-counts:end -->"


def configs() -> list[Path]:
    """Every config of the folder: `*.json` files and checkpoint folders holding a config.json."""
    return sorted([p for p in CONFIGS.glob("*.json")] + [p for p in CONFIGS.iterdir() if (p / "config.json").is_file()])


def count(path: Path) -> dict:
    """transformers' parameter count of the config at `path` (with its vision tower), or why it cannot be built."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    data = json.loads(((path / "config.json") if path.is_dir() else path).read_text())
    if "model_type" not in data:
        return {"error": "no model_type (a mamba_ssm library config, which transformers does not read)"}
    notes = []
    with tempfile.TemporaryDirectory() as tmp:  # from_pretrained reads a folder's config.json, offline
        for _ in range(8):
            (Path(tmp) / "config.json").write_text(json.dumps(data))
            try:
                config = AutoConfig.from_pretrained(tmp, trust_remote_code=False)
                break
            except Exception as err:  # noqa: BLE001 - the reason is the record
                field = re.search(r"Validation error for field '(\w+)'", str(err))
                if field and isinstance(data.get(field.group(1)), int) and "float" in str(err):
                    # a published integer where the config class declares a float (strict dataclasses refuse it)
                    data[field.group(1)] = float(data[field.group(1)])
                    notes.append(f"{field.group(1)} {int(data[field.group(1)])} read as a float")
                    continue
                return {"error": f"AutoConfig: {type(err).__name__}: {str(err).splitlines()[0][:160]}"}
    multimodal = getattr(config, "vision_config", None) is not None
    built = config if multimodal else config.get_text_config()
    try:
        with torch.device("meta"):
            model = (AutoModelForImageTextToText if multimodal else AutoModelForCausalLM).from_config(built)
    except Exception as err:  # noqa: BLE001
        return {"error": f"from_config: {type(err).__name__}: {str(err).splitlines()[0][:160]}"}
    row = {"class": type(model).__name__, "model_type": built.model_type,
           "params": sum(p.numel() for p in model.parameters())}
    return row | ({"note": "; ".join(notes)} if notes else {})


def write_table() -> dict:
    import torch
    import transformers

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = {}
    for path in configs():
        rows[path.name] = count(path)
        print(path.name, rows[path.name], file=sys.stderr)
    table = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
             "how": "AutoModelForImageTextToText.from_config(config) for a config with a vision_config (the model "
                    "with its vision tower), else AutoModelForCausalLM.from_config(config.get_text_config()), config = "
                    "AutoConfig.from_pretrained(folder), on the meta device; sum(p.numel() for p in model.parameters())",
             "counts": rows}
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    return table


def mcache_params(name: str) -> int | None:
    from mcache.core.hf import import_hf
    from mcache.core.sizing.weights import total_params

    return total_params(import_hf(CONFIGS / name))


def why_not(error: str) -> str:
    """A short reason a config was not built, from the recorded error."""
    if "custom code" in error:
        return "remote code"
    if "does not recognize" in error:
        return "model type not in transformers"
    return error.split(" (")[0]


def readme_section(table: dict) -> str:
    """The README's comparison table, drawn from `table` and mcache's estimate of each config."""
    lines = [f"transformers {table['transformers']} (torch {table['torch']}), each config's causal-LM class (a "
             "multimodal config's image-text-to-text class, vision tower included) built on the meta device "
             "(`scripts/param_counts.py`, table in `tests/data/param_counts.json`); mcache's figure leaves "
             "MTP layers out, as transformers' classes do.", "",
             "| config | transformers class | transformers | mcache | difference |",
             "|---|---|---:|---:|---:|"]
    skipped, notes = [], []
    for name, row in table["counts"].items():
        if "error" in row:
            skipped.append(f"`{name}` ({why_not(row['error'])})")
            continue
        ours = mcache_params(name)
        gap = f"{ours - row['params']:+,} ({(ours / row['params'] - 1) * 100:+.3f}%)" if ours else "weights unknown"
        lines.append(f"| `{name}` | {row['class']} | {row['params']:,} | {ours:,} | {gap} |")
        if row.get("note"):
            notes.append(f"`{name}`: {row['note']}")
    if notes:
        lines += ["", "Read with a change transformers needs: " + "; ".join(notes) + "."]
    if skipped:
        lines += ["", "Not built by transformers: " + ", ".join(skipped) + "."]
    return "\n".join(lines)


def write_readme(table: dict) -> None:
    text = README.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"README.md has no {START} ... {END} section")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{readme_section(table)}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readme", action="store_true", help="only redraw the README section from the committed table")
    args = parser.parse_args()
    table = json.loads(TABLE.read_text()) if args.readme else write_table()
    write_readme(table)


if __name__ == "__main__":
    main()
