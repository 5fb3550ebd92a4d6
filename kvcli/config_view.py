"""`kvcli config`'s views: the sizing as tables and lines (`sizing_view`), the CPU tier's size
(`add_cpu_tier`), the presets (`list_view`) and the prefix-match unit's line."""

from __future__ import annotations

from typing import Any

from kvcore.models.mamba_only import NO_LIMIT
from kvcore.sizing.buffers_term import buffers_text


def _short_layers(names: list[str]) -> str:
    # (a sparse MLA layer's indexer cache is "layers.N.indexer": shown as "N.indexer")
    idx = [n.removeprefix("layers.") if n.startswith("layers.") else n.rsplit(".", 1)[-1]
           for n in names]
    return ",".join(idx) if len(idx) <= 8 else ",".join(idx[:6]) + f",... ({len(idx)})"


def sizing_view(result: Any, *, gpu_memory_gib: float | None, gpu_memory_utilization: float,
                activation_gib: float, tp: int):
    """The `View` of `kvcli config`: the JSON document and its tables."""

    from kvcli.output import Table, View
    from kvcore.sizing.explain import to_json

    data = to_json(result, gpu_memory_gib=gpu_memory_gib,
                   gpu_memory_utilization=gpu_memory_utilization, activation_gib=activation_gib,
                   tp=tp)
    rows = [(g["index"], g["kind"], g["block_size"], g["num_layers"], _short_layers(g["layers"]),
             g["page_size_bytes"], g["blocks_per_request"]) for g in data["groups"]]
    groups = Table(f"KV cache groups of {data['model']} ({data['layers']} layers: " + ", ".join(
        f"{n} {k}" for k, n in data["layer_kinds"].items()) + ")",
        ("group", "kind", "block", "layers", "which", "page bytes", "blocks/request"), rows)
    formulas: dict[str, list[int]] = {}
    for g in data["groups"]:
        formulas.setdefault(g["page_formula"], []).append(g["index"])
    text = [f"page, group{'s' if len(ids) > 1 else ''} {','.join(map(str, ids))}: {f}"
            for f, ids in formulas.items()]
    m = data["memory"]
    least = result.pool_stage
    if m["gpu_memory_gib"] is not None:
        text.append(
            f"available KV memory = {m['gpu_memory_gib']:g} GiB x 2^30 x "
            f"{m['gpu_memory_utilization']:g} - weights {m['weights_gib']:.2f} GiB"
            + (f" (estimated) - buffers {buffers_text(m['buffers_bytes'])} (estimated: RoPE "
               "caches, attention scales" + (", per-layer-embedding scratch" if result.geometry
                                             .ple_scratch_width else "") + ")"
               if m["weights_estimated"] else " (buffers in it)")
            + (f" - activations {m['activation_gib']:g} GiB" if m["activation_gib"] else "")
            + f" = {m['available_kv_cache_bytes']:,} bytes ({m['available_kv_cache_gib']:.2f} GiB)"
            + (f" per worker (tensor parallel {tp})" if tp > 1 else "")
            + (f" on pipeline stage {least}, the one that fits the fewest blocks"
               if data["stages"] else ""))
    if (d := data["draft"]) is not None:
        text.append(f"draft ({d['method']}): {d['model']}, {d['architecture']}: "
                    f"{d['layers']} layer{'s' if d['layers'] > 1 else ''} of {d['num_kv_heads']} "
                    f"kv heads x {d['head_dim']} in the groups ({', '.join(d['layer_names'])}), "
                    f"weights {d['weights_gib']:.2f} GiB"
                    + (" (estimated, in the weights above)" if m["weights_estimated"] else
                       " (given within --weights-gib)" if m["gpu_memory_gib"] is not None
                       else "")
                    + ("" if (was := d["max_model_len_lowered_from"]) is None else
                       f"; max_model_len {was:,} lowered to the draft's {data['max_model_len']:,}"
                       " (its RoPE does not only size a cache: vLLM's V2 model runner cannot "
                       "skip speculation past it)"))
    if (v := data["multimodal"]) is not None:
        text.append(_vision_line(v, m["gpu_memory_gib"] is not None))
    widest = max((g["num_layers"] for g in data["groups"]), default=0)
    pages = [g["page_size_bytes"] for g in data["groups"]]
    text.append(f"bytes per block = stage {least}'s layers' pages = {data['bytes_per_block']:,}"
                if data["stages"] else
                # (every group's page side by side in one block: `kvcore.sizing.packing`)
                f"bytes per block = the widest group's page (group {pages.index(max(pages))}, "
                f"block-outermost) = {data['bytes_per_block']:,}"
                if data["kv_cache_layout"] == "block_outermost" else
                f"bytes per block = {widest} layers x page = {data['bytes_per_block']:,}")
    fit = (None if m["gpu_memory_gib"] is None
           else m["available_kv_cache_bytes"] // data["bytes_per_block"])
    text.append(f"num_blocks = {data['num_blocks']:,}"
                + ("" if fit is None else
                   f" = {m['available_kv_cache_bytes']:,} // {data['bytes_per_block']:,}"
                   if fit == data["num_blocks"] else f" (--num-blocks; {fit:,} fit the memory)")
                + " (block 0 is the null block)")
    per_req = sum(g["blocks_per_request"] for g in data["groups"])
    text.append(f"max concurrency at max_model_len {data['max_model_len']:,} = "
                f"{data['num_blocks']:,} / {per_req:,} blocks per request = "
                f"{data['max_concurrency']:.2f}")
    text.append(_capacity_line(data))
    fits = data["max_model_len_fits"]
    # (an attention-free model with no length key: vLLM takes any max_model_len, and one
    # request's state does not grow with it)
    text.append("largest max_model_len that fits = " + (
        f"{fits:,}" if fits < NO_LIMIT else "any (the model sets no limit and a request's "
        "blocks do not grow with its length)"))
    tables = [groups]
    if data["stages"]:
        tables.append(_stages_table(data["stages"], data["num_blocks"], least))
    return View(data, tables=tables, text=text)


def _capacity_line(data: dict) -> str:
    """vLLM's capacity; beside it the pool's token slots, which for a block-outermost pool
    (DeepSeek-V4's) depend on the group: there vLLM's own log line instead, whose tokens are
    max_concurrency x max_model_len whatever the groups' blocks."""
    line = f"KV cache capacity = {data['kv_cache_tokens']:,} tokens "
    if data["kv_cache_layout"] != "block_outermost":
        return line + f"(vLLM's 'GPU KV cache size'); pool = {data['pool_tokens']:,} token slots"
    blocks = "/".join(str(g["block_size"]) for g in data["groups"])
    return (line + f"(vLLM logs 'GPU KV cache size: {data['kv_cache_tokens']:,} tokens, "
            f"Maximum concurrency for {data['max_model_len']:,} tokens per request: "
            f"{data['max_concurrency']:.2f}x'); pool = {max(data['num_blocks'] - 1, 0):,} "
            f"usable blocks, each holding {blocks} tokens of groups "
            f"0-{len(data['groups']) - 1}")


def _stages_table(stages: list[dict], pool: int, least: int | None):
    """Each pipeline stage's planning; the pool is the fewest blocks any stage fits."""
    from kvcli.output import Table

    rows = [(s["stage"], "-".join(map(str, s["layers"])), s["kv_layers"],
             f"{s['weights_bytes'] / 2**30:.2f}", f"{s['available_bytes'] / 2**30:.2f}",
             s["bytes_per_block"], s["num_blocks"]) for s in stages]
    return Table(f"pipeline stages ({len(stages)}): every stage's pool is {pool:,} blocks, "
                 f"stage {least}'s", ("stage", "layers", "KV layers", "weights GiB",
                                      "KV GiB", "bytes/block", "blocks fit"), rows,
                 caption="vLLM's planner: the whole model's groups projected onto each "
                         "stage's layers; each stage sized from its own memory, then the "
                         "smallest count for all")


def add_cpu_tier(view: Any, gib: float, offload_block_size: int | None, block_size: int,
                 tp: int, groups: Any = ()) -> None:
    """The CPU tier's size as vLLM 0.33 derives it (`kvcore.offload.config`), into the view:
    JSON key ``cpu_offload`` and a few lines. A chunk holds ``tp`` ranks' copies (every rank's:
    TP x PP, or one of an MLA latent) of rank 0's block: the first pipeline stage's, whose
    KV cache config vLLM's scheduler plans with. ``groups``: the KV cache groups, for vLLM's
    `cpu_kv_cache_size_tokens` at the view's max_model_len."""
    from kvcore.errors import InputError
    from kvcore.offload.config import (
        blocks_per_chunk_of,
        chunk_bytes,
        chunks_of,
        cpu_kv_cache_size_tokens,
    )

    if not gib > 0:
        raise InputError(f"must be a number > 0, got {gib}", field="kv_offloading_size")
    bpc = blocks_per_chunk_of(offload_block_size, block_size, field="kv_offloading_block_size")
    stages = view.data.get("stages")
    rank0 = stages[0]["bytes_per_block"] if stages else view.data["bytes_per_block"]
    per_block = rank0 * tp      # a chunk holds every rank's share
    per_chunk = chunk_bytes(per_block, bpc)
    n = chunks_of(gib, per_chunk)
    tier = {"kv_offloading_size_gib": gib, "cpu_bytes_to_use": int(gib * 2**30),  # (vLLM: a float)
            "blocks_per_chunk": bpc, "tokens_per_chunk": bpc * block_size,
            "kv_bytes_per_chunk": per_chunk, "cpu_num_chunks": n,
            "cpu_token_slots": n * bpc * block_size,
            "cpu_kv_cache_size_tokens": cpu_kv_cache_size_tokens(
                n, bpc, list(groups), view.data.get("max_model_len")),
            "cpu_kv_cache_size_bytes": n * per_chunk}
    view.data["cpu_offload"] = tier
    view.text.append(
        f"CPU tier (--kv-offloading-size {gib:g}) = int({gib:g} x 2^30) // "
        f"{per_chunk:,} bytes a chunk ({bpc} block{'s' if bpc > 1 else ''}"
        f"{f' x {tp} ranks' if tp > 1 else ''}, rounded up to 4 KiB) = {n:,} chunks = "
        f"{n * bpc * block_size:,} token slots"
        + (" (vLLM 0.33 runs a tier of 0 chunks: every store fails)" if n == 0 else ""))
    if tier["cpu_kv_cache_size_tokens"] is not None:
        view.text.append(f"CPU tier holds {tier['cpu_kv_cache_size_tokens']:,} tokens of "
                         f"max_model_len requests (vLLM's cpu_kv_cache_size_tokens)")


def list_view():
    from collections import Counter

    from kvcli.output import Table, View
    from kvcore.models.presets import PRESETS, load_preset

    rows, data = [], []
    for key, (repo, _) in PRESETS.items():
        g = load_preset(key)
        kinds = ", ".join(f"{n} {k}" for k, n in Counter(g.layer_kinds).items())
        # what the KV cache holds: an MLA model caches one latent vector, not its heads
        kv_heads, head_dim = (1, g.mla.latent_size) if g.mla else (g.num_kv_heads, g.head_dim)
        rows.append((key, repo, g.num_layers, kinds, kv_heads, head_dim, g.dtype,
                     g.max_position_embeddings))
        data.append({"name": key, "repo": repo, "layers": g.num_layers,
                     "layer_kinds": dict(Counter(g.layer_kinds)), "kv_heads": kv_heads,
                     "head_dim": head_dim, "dtype": g.dtype,
                     "max_position_embeddings": g.max_position_embeddings})
    return View({"presets": data}, tables=[Table("model presets", (
        "name", "repo", "layers", "kinds", "kv heads", "head dim", "dtype", "max len"), rows)])


def prefix_match_line(pm: dict) -> str:
    """--prefix-match-unit's effect, a line under the table."""
    line = (f"prefix matching: hash block {pm['hash_block_size']:,} tokens, scheduler block "
            f"{pm['scheduler_block_size']:,}; hits land every "
            f"{pm['cache_hit_alignment_tokens']:,} tokens")
    if pm["partial_hash_hits"]:
        line += " (vLLM's partial-block hits)"
    return line


def batch_source(gpu: str | None, performance_mode: str) -> str:
    """Where the scheduler line's values start when one is not given: the named GPU's `vllm
    serve` batch defaults, else SchedulerConfig's, which no `vllm serve` on a GPU starts from
    (`kvcore.engine.serve_defaults`); doubled in throughput mode."""
    from kvcore.clock.gpus import find_gpu
    from kvcore.engine.serve_defaults import BATCH_OPTIONS, rows_text

    words = (f"from vllm serve's batch defaults on {find_gpu(gpu).name}" if gpu else
             "from SchedulerConfig's defaults; vllm serve's follow its GPU (--gpu): "
             f"{rows_text(*BATCH_OPTIONS)}")
    if performance_mode == "throughput":
        words += ", doubled: performance mode throughput"
    return words


def _vision_line(v: dict, memory: bool) -> str:
    """The vision tower vLLM builds under its multimodal serving options."""
    limits = ", ".join(f"{k} {n:,}" for k, n in v["limits"].items())
    if v["vision_tower"] == "skipped":
        why = "--language-model-only" if v["language_model_only"] else f"limits {limits}"
        return f"vision tower: not built ({why}): no weights" + (
            " (left to the KV cache)" if memory else "")
    how = ("whole on every TP rank (--mm-encoder-tp-mode data)" if v["mm_encoder_tp_mode"] ==
           "data" else "split over TP where vLLM splits it")
    return (f"vision tower: built (limits {limits}), {how}: {v['vision_weights_gib']:.2f} GiB "
            "a GPU" + (", in the weights above" if memory else ""))
