"""`mcache import-hf`: turn a Hugging Face `config.json` (a file, a checkpoint folder or a Hub id) into a spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcache.cli.options import DraftModelOption
from mcache.core.hf import supported_model_types


def import_hf(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help=(
        "A config.json, a checkpoint folder holding one, or a Hugging Face repo id ORG/NAME[@REVISION] (fetches "
        "config.json and hf_quant_config.json only, through huggingface_hub and its cache)."))],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the spec to this file (atomically), not stdout.")
    ] = None,
    draft_model: DraftModelOption = None,
) -> None:
    """Write the spec of a Hugging Face config; it loads back to the same estimate (`mcache size SPEC`)."""
    from mcache.cli.output import draft_inputs, emit_text, refuse_input_as_output, spec_inputs
    from mcache.core.load import import_config, with_drafter  # the importer loads only for this command
    from mcache.core.spec.dump import spec_to_yaml

    if Path(spec).exists():
        refuse_input_as_output(output, *spec_inputs(Path(spec)))
    refuse_input_as_output(output, *draft_inputs(draft_model))
    emit_text(spec_to_yaml(with_drafter(import_config(spec), draft_model)), output)


import_hf.__doc__ = (f"{import_hf.__doc__}\n\nModel types: {', '.join(supported_model_types())}, and mamba_ssm "
                     "configs (d_model, n_layer, ssm_cfg).")
