"""`mcache import-hf`: turn a Hugging Face `config.json` into a spec YAML, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcache.core.hf import supported_model_types


def import_hf(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="A config.json, or a checkpoint folder holding one. Never downloads.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write the spec to this file (atomically), not stdout.")
    ] = None,
) -> None:
    """Write the spec of a Hugging Face config; it loads back to the same estimate (`mcache size SPEC`)."""
    from mcache.cli.output import emit_text, refuse_input_as_output, spec_inputs
    from mcache.core.hf import import_hf as convert  # the importer loads only for this command
    from mcache.core.spec.dump import spec_to_yaml

    refuse_input_as_output(output, *spec_inputs(path))
    emit_text(spec_to_yaml(convert(path)), output)


import_hf.__doc__ = (f"{import_hf.__doc__}\n\nModel types: {', '.join(supported_model_types())}, and mamba_ssm "
                     "configs (d_model, n_layer, ssm_cfg).")
