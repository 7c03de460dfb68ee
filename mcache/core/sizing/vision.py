"""Parameters of a multimodal checkpoint's vision tower (the spec's `vision` block with a `tower`), which the engines
load beside the text model whether or not a request carries an image, on every PP stage: the model classes build
it in `__init__` without a pipeline-stage test (SGLang v0.5.23 python/sglang/srt/models/qwen3_vl.py
Qwen3VLForConditionalGeneration, which qwen3_5.py's classes extend, and kimi_k3.py KimiK3ForConditionalGeneration;
vLLM model_executor/models/qwen3_vl.py Qwen3VLForConditionalGeneration, read at commit 002d7b9, which qwen3_5.py's
Qwen3_5ForConditionalGeneration extends). Options that leave it out (vLLM's `--limit-mm-per-prompt` at zero for every
modality, SGLang's `language_model_only`, a data-parallel encoder) are not modelled; TensorRT-LLM's classes were not
read.

The tower is two units: `proj`, the linear layers an engine may shard by TP (each block's q/k/v and output
projections and its MLP, the projector's two linears, with the biases of the column-parallel ones), and `other`,
what every rank holds whole (the patch embedding, the learned position embeddings, the norms, the row-parallel
linears' biases). Both are stored in the model dtype: the quantized checkpoints keep the tower unquantized (their
ignore lists name `model.visual*`, `vision_tower` and `mm_projector`).
"""

from __future__ import annotations

from mcache.core.spec.model import Vision

# Whether the engines shard a tower's `proj` by TP (else every TP rank holds it whole):
# - qwen3_5: yes. vLLM model_executor/models/qwen3_vl.py at 002d7b9 (Qwen3_VisionTransformer, which qwen3_5.py builds) makes
#   q/k/v a QKVParallelLinear, the MLP's and the merger's fc1/fc2 Column/RowParallelLinear, `disable_tp` only with
#   `--mm-encoder-tp-mode data`; SGLang v0.5.23 python/sglang/srt/models/qwen3_vl.py likewise unless
#   `--mm-enable-dp-encoder`. Neither option is modelled (the default).
# - kimi_k3: no. SGLang v0.5.23 python/sglang/srt/models/kimi_k3.py KimiK3ForConditionalGeneration sets
#   `use_data_parallel = True` ("the dedicated K3 tower runs replicated (per-rank full weights)") and kimi_k3_vl.py
#   builds it of plain nn.Linear.
TP_SHARDED = {"qwen3_5": True, "kimi_k3": False}


def tower_units(v: Vision) -> dict[str, int]:
    """`{"proj": n, "other": n}`: the tower's parameters by unit; empty when the tower is not weighed (no `tower`)."""
    if v.tower is None:
        return {}
    h, inner, layers = v.hidden_size, v.intermediate_size, v.num_layers
    qkv = v.attention_size or h
    merged = v.merge_size * h  # the projector's input: `merge_size` patches concatenated
    patch = v.in_channels * v.temporal_patch_size * v.patch_size**2 * h  # a Conv3d (Conv2d) of stride = kernel
    embed = v.position_embeddings * h
    if v.tower == "qwen3_5":
        # transformers 5.23.0 models/qwen3_5/modeling_qwen3_5.py Qwen3_5VisionModel: Conv3d with bias; blocks of
        # two LayerNorms, qkv [3h, h] and proj [h, h], MLP linear_fc1/fc2 [i, h]/[h, i], every linear with a bias;
        # the merger: LayerNorm(h), linear_fc1 [m, m], linear_fc2 [out, m], both with bias. No deepstack mergers.
        proj = layers * (3 * h * h + 3 * h + h * h + 2 * h * inner + inner) + merged * merged + merged + merged * v.out_hidden_size
        other = patch + h + embed + layers * (2 * 2 * h + h + h) + 2 * h + v.out_hidden_size
        return {"proj": proj, "other": other}
    # kimi_k3: SGLang v0.5.23 python/sglang/srt/models/kimi_k3_vl.py (KimiK3VisionTower, KimiK3MultiModalProjector):
    # Conv2d without bias; blocks of two RMSNorms, wqkv [3a, h], wo [h, a], MLP fc0/fc1 [i, h]/[h, i], no biases;
    # a final RMSNorm; the projector: [m, m], [out, m] without bias and a post RMSNorm(out).
    proj = layers * (3 * qkv * h + qkv * h + 2 * h * inner) + merged * merged + merged * v.out_hidden_size
    other = patch + embed + layers * 2 * h + h + v.out_hidden_size
    return {"proj": proj, "other": other}


def tower_params(v: Vision | None) -> int:
    """Parameters of the tower (0 without one, or when it is not weighed)."""
    return sum(tower_units(v).values()) if v is not None else 0


def rank_tower_params(v: Vision | None, tp: int) -> int:
    """Parameters of the tower one TP rank holds: `proj` split by TP where the engines shard it (`TP_SHARDED`)."""
    if v is None or v.tower is None:
        return 0
    units = tower_units(v)
    return units["proj"] // (tp if TP_SHARDED[v.tower] else 1) + units["other"]
