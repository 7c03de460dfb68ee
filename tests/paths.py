"""Where the test data lives."""

from pathlib import Path

HERE = Path(__file__).parent
HF_CONFIGS = HERE / "data" / "hf_configs"  # copies of ../shared/hf_configs, so the tests never skip
HF_CONFIGS_EXTRA = HERE / "data" / "hf_configs_extra"  # real configs the shared fixtures lack (PROVENANCE.md there)
HF_CONFIGS_INDEXER = HERE / "data" / "hf_configs_indexer"  # models with a sparse-attention indexer (PROVENANCE.md there)
TINY_SPEC = str(HERE / "specs" / "tiny-hybrid.yaml")
