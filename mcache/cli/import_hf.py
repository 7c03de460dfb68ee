"""`mcache import-hf` (being written)."""


def import_hf() -> None:
    """Import a Hugging Face config.json as a spec."""
