"""The `mcache size` report as plain, JSON-ready data (the output module renders it): the neutral model's sections,
the engine's run and the transfer plan, all from one `Deployment`."""

from __future__ import annotations

import msgspec
from msgspec.structs import asdict

from mcache import __version__
from mcache.core.deployment import Deployment, Sized, size_deployment
from mcache.core.errors import LayoutError, McacheError, ReceiverError
from mcache.core.options import SizeOptions
from mcache.core.sizing import drafter
from mcache.core.sizing.buffers import COMPONENTS
from mcache.core.sizing.estimate import RankEstimate
from mcache.core.sizing.layout import ParallelLayout
from mcache.core.sizing.neutral import NeutralRun
from mcache.core.sizing.weights import index_note, mtp_params, stored_bytes, total_params, unknown_fields
from mcache.core.spec.model import ModelSpec

# 2: runtime.max_batch_source, capacity.fits and per-rank KV/state bytes per sequence, engine runs,
# model.weight_format and weights_unknown; model.param_bytes is the stored size (null: unknown); capacity per
# stage weight_bytes and weights_given; model.param_count and param_bytes leave the MTP layers out (model.mtp_param_count
# holds them), as engines do unless they draft with them; model.stored_bytes_index(_source) and capacity.weights_source
# added since (optional to a reader of 2); capacity.attention_dp_ranks and max_sequences_per_rank (a rank's figure,
# which capacity.max_sequences, the replica's, is attention_dp_ranks times) and engine.max_running_requests_per_rank
# and attention_dp_ranks likewise: without attention DP every figure is what it was; layout.attention_dp_size (the
# attention-DP width, --attn-dp-size, tp with --attention-dp; null without attention DP)
SCHEMA_VERSION = 2


def _rank(r: RankEstimate) -> dict:
    ctx = r.ctx
    return {
        "stage": ctx.stage,
        "layers": [ctx.layers.start, ctx.layers.stop],
        "layer_counts": {k: ctx.counts[k] for k in ctx.kinds},
        "slots": ctx.num_slots,
        "kv_bytes_per_token": r.kv_bytes_per_token,
        "conv_bytes_per_slot": r.conv_bytes_per_slot,
        "ssm_bytes_per_slot": r.ssm_bytes_per_slot,
        "state_bytes_per_slot": r.state_bytes_per_slot,
        "component_bytes": {c: r.bytes_of(c) for c in COMPONENTS},
        "cache_bytes": r.cache_bytes,
        "param_count": r.param_count,
        "weight_bytes": r.weight_bytes,
        "components": [
            {
                "component": c.decl.component,
                "kind": c.decl.kind,
                "name": c.decl.name,
                "layers": c.decl.layers,
                "per": c.decl.per,
                "tokens_per_row": c.decl.tokens_per_row,
                "shape": list(c.decl.shape),
                "axes": list(c.decl.axes),
                "dtype": c.decl.dtype,
                "bytes_per_unit": c.decl.bytes_per_unit,
                "units": c.units,
                "total_bytes": c.total_bytes,
            }
            for c in r.components
        ],
    }


class SizeReport(msgspec.Struct, frozen=True):
    """What `mcache size` shows (`data`, JSON-ready) and the figures it was drawn from (`sized`)."""

    data: dict
    sized: Sized


def size_report(spec: ModelSpec, d: Deployment, origin: str, transfer_to: ParallelLayout | None = None) -> SizeReport:
    """Size `d` and report it whole: the neutral model's sections, the engine's run (with an engine) and, with
    `transfer_to`, what one request moves from each rank to each rank of a receiver of that layout."""
    sized = size_deployment(spec, d)
    data = neutral_report(sized.neutral, origin, sized.dtype_sources)
    if transfer_to is not None:
        est = sized.neutral.estimate
        from mcache.core.transfer_plan import transfer_plan  # only with a receiver layout

        try:
            plan = transfer_plan(spec, est.dtypes, est.layout, transfer_to, sized.neutral.context,
                                 est.runtime.tokens_per_block)
        except LayoutError as err:  # the sender's layout was sized above: this is the receiver's
            raise receiver_error(err) from None
        data["transfer"] = msgspec.to_builtins(plan)
    if sized.engine:
        data["engine"] = sized.engine.as_json()
    elif data["capacity"] is not None:
        data["capacity"]["engines"] = engines_beside(spec, d, sized.neutral.context)
    return SizeReport(data, sized)


def receiver_error(err: LayoutError) -> ReceiverError:
    """A receiver layout's error, named by the option that set it: its stages by `transfer_to_pp`, anything else (its
    TP against the model's heads) by `transfer_to_tp`."""
    return ReceiverError("transfer_to_pp" if err.field == "pp" else "transfer_to_tp", err)


def engines_beside(spec: ModelSpec, d: Deployment, context: int) -> list[dict]:
    """Each engine's run with its defaults on the spec, layout and GPU of `d` at `context` (through the one
    `size_deployment`), for the line beside the neutral figure: what its replica and one rank run at once and what
    binds, or why it would not start (the first sentence of its error). The weights are weighed as `d`'s (its
    `weight_format`)."""
    from mcache.core.engines import NAMES, newest_version

    model = SizeOptions(weight_format=d.options.weight_format)
    lines = []
    for name in NAMES:
        entry = {"name": name, "version": newest_version(name), "max_running_requests": None,
                 "max_running_requests_per_rank": None, "attention_dp_ranks": d.layout.attention_dp_ranks,
                 "binding": None, "startup_error": None, "context": context}
        try:
            try:
                run = size_deployment(spec, Deployment(d.layout, d.gpu, name, model, context=context)).engine
            except LayoutError as err:
                if err.field != "context":
                    raise
                # the engine's max model length is shorter than the neutral context: what it runs at its own length
                run = size_deployment(spec, Deployment(d.layout, d.gpu, name, model)).engine
                entry["context"] = run.context
        except McacheError as err:
            entry["startup_error"] = _first_sentence(str(err))
        else:
            failed = [st.startup_error for st in run.stages if st.startup_error]
            if failed:
                entry["startup_error"] = _first_sentence(failed[0])
            else:
                bound = min(run.stages, key=lambda st: st.max_running_requests or 0)
                entry |= {"max_running_requests": run.max_running_requests,
                          "max_running_requests_per_rank": run.max_running_requests_per_rank, "binding": bound.binding}
        lines.append(entry)
    return lines


def _first_sentence(text: str) -> str:
    head = text.split(". ")[0].split("; ")[0].strip()
    return head[:-1] if head.endswith(".") else head


def _drafter(spec) -> dict | None:
    """The spec's drafter (`--draft-model`): what it is, its layers' windows as the neutral model reads them (None:
    full attention) and its parameters; None without one. Its KV and weights are in the ranks while it drafts."""
    d = spec.drafter
    if d is None:
        return None
    return {"method": d.method, "architecture": d.architecture, "num_layers": d.num_layers,
            "windows": drafter.windows(d), "param_count": sum(n for *_, n in drafter.units(spec)), "source": d.source}


def neutral_report(run: NeutralRun, origin: str, dtype_sources: dict[str, str] | None = None) -> dict:
    """The neutral model's sections: model, layout, runtime, dtypes, per-rank bytes, capacity."""
    est = run.estimate
    spec, rt, layout = est.spec, est.runtime, est.layout
    params = total_params(spec)
    report = {
        "schema_version": SCHEMA_VERSION,
        "mcache_version": __version__,
        "model": {
            "name": spec.name,
            "source": spec.source,
            "spec": origin,
            "notes": " ".join(n for n in (spec.notes, index_note(spec)) if n),
            "param_count": params,
            "param_bytes": stored_bytes(spec),
            # the MTP layers, loaded only with a draft (`weights.loads_draft_head`): in the per-rank figures then, never above
            "mtp_param_count": None if params is None else mtp_params(spec),
            "weight_format": spec.quantization.format if spec.quantization else spec.dtype,
            "weights_unknown": unknown_fields(spec),
            # the checkpoint's safetensors index: metadata.total_size (all it stores, MTP tensors included) and the file
            "stored_bytes_index": spec.stored_weights.total_size if spec.stored_weights else None,
            "stored_bytes_index_source": spec.stored_weights.source if spec.stored_weights else None,
            "max_model_len": spec.max_model_len,
            "drafter": _drafter(spec),
        },
        "layout": {
            "tp": layout.tp,
            "pp": layout.pp,
            "attention_dp": layout.attention_dp,
            "attention_dp_size": layout.attention_dp_width,
            "pp_partition": [len(s) for s in layout.stages(spec.num_layers)],
        },
        "runtime": {
            "max_batch": rt.max_batch,
            "max_batch_source": "--max-batch" if run.batch_given else "memory" if run.slots_from_memory else "default",
            "max_seq_len": rt.max_seq_len,
            "tokens_per_block": rt.tokens_per_block,
            "draft_tokens": rt.draft_tokens,
            "spec_scheme": rt.spec_scheme,
            "reserved_slots": rt.reserved(layout.attention_dp),
            "snapshot_slots": rt.snapshot_slots,
        },
        "dtypes": asdict(est.dtypes),
        "dtype_sources": dtype_sources or {},
        "ranks": [_rank(r) for r in est.ranks],
        # Without a GPU the tightest stage is the one holding the most bytes (weights + cache).
        "tightest_stage": max(est.ranks, key=lambda r: (r.weight_bytes or 0) + r.cache_bytes).ctx.stage,
        "capacity": None,
    }
    budget = run.budget
    if budget is not None:
        gpus = layout.tp * layout.pp
        per_rank = run.caps[run.tightest].max_sequences
        replica = layout.replica_sequences(per_rank)
        report["capacity"] = {
            "gpu": budget.gpu_name,
            "gpu_bytes": budget.gpu_bytes,
            "utilization": budget.utilization,
            "reserve_bytes": budget.reserve_bytes,
            "weights_given": budget.weights_bytes is not None,
            # where each rank's weights come from: --weights, mcache's estimate, or the safetensors index's share
            "weights_source": "given" if budget.weights_bytes is not None else (
                "index" if unknown_fields(spec) else "estimate"),
            "context": run.context,
            "concurrency": run.concurrency,
            "slots_from_memory": run.slots_from_memory,
            "fits": run.fits,
            "tightest_stage": run.tightest,
            # one replica is TP x PP GPUs; each rank runs the tightest stage's figure (ranks[*].max_sequences), and the
            # replica runs it times the ranks that each run a batch of their own (tp under attention DP, else 1)
            "gpus_per_replica": gpus,
            "attention_dp_ranks": layout.attention_dp_ranks,
            "max_sequences_per_rank": per_rank,
            "max_sequences": replica,
            "max_sequences_per_gpu": round(replica / gpus, 2),
            "ranks": [asdict(c) | _per_sequence(r, run.context) for c, r in zip(run.caps, est.ranks, strict=True)],
        }
        report["tightest_stage"] = run.tightest
    return report


def _per_sequence(rank: RankEstimate, context: int) -> dict:
    """What one more sequence of `context` tokens costs the rank: its KV and its state slot."""
    return {"kv_bytes_per_sequence": rank.kv_bytes_per_seq(context), "state_bytes_per_sequence": rank.bytes_per_unit("slot")}
