"""`kvcli config [MODEL]`: how many KV cache blocks fit this model on this GPU, and why.

Groups, each page size with its formula, num_blocks, capacity in tokens, max concurrency at
max_model_len and the largest max_model_len that fits, as vLLM 0.33 plans them. ``--json``
keys are documented in `kvcore.sizing.explain`. ``--list`` lists the presets.
"""

from __future__ import annotations

from typing import Any

import typer

from kvcli import config_options as co
from kvcore.sizing_context import DEFAULT_GPU_MEMORY_UTILIZATION


def register(app: typer.Typer) -> None:
    @app.command("config")
    def config(
        ctx: typer.Context,
        model: co.ModelArg = None,
        list_presets: co.ListOpt = False,
        model_config: co.ModelConfigOpt = None,
        gpu_memory_gib: co.GpuMemOpt = None,
        gpu_memory_utilization: co.UtilOpt = DEFAULT_GPU_MEMORY_UTILIZATION,
        weights_gib: co.WeightsOpt = None,
        activation_gib: co.ActivationOpt = 0.0,
        kv_cache_dtype: co.KvCacheDtypeOpt = "auto",
        dtype: co.DtypeOpt = None,
        block_size: co.BlockSizeOpt = None,
        max_model_len: co.MaxModelLenOpt = None,
        max_num_batched_tokens: co.BudgetOpt = None,
        max_num_seqs: co.SeqsOpt = None,
        enable_chunked_prefill: co.ChunkedOpt = True,
        async_scheduling: co.AsyncOpt = None,
        max_concurrent_batches: co.BatchesOpt = None,
        num_blocks: co.NumBlocksOpt = None,
        tensor_parallel_size: co.TpOpt = 1,
        layers: co.LayersOpt = None,
        kv_heads: co.KvHeadsOpt = None,
        head_dim: co.HeadDimOpt = None,
        sliding_window: co.WindowOpt = None,
        sliding_layers: co.SlidingLayersOpt = None,
        attention_chunk_size: co.ChunkOpt = None,
        chunked_layers: co.ChunkedLayersOpt = None,
        disable_hybrid: co.NoHybridOpt = False,
        pad_pages: co.PadOpt = False,
        enable_prefix_caching: co.PrefixOpt = True,
        prefix_match_unit: co.UnitOpt = None,
        kv_offloading_size: co.OffloadOpt = None,
        kv_offloading_backend: co.OffloadBackendOpt = None,
        kv_offloading_block_size: co.OffloadBlockOpt = None,
        as_json: co.JsonOpt = False,
    ) -> None:
        """How many KV cache blocks fit a model on a GPU: groups, page formulas, capacity."""
        from kvcli import output

        def go() -> None:
            from kvcore.errors import InputError
            from kvcore.vllm_values import kv_cache_dtype as vllm_kv_dtype
            from kvcore.vllm_values import kv_offloading_backend as check_backend

            if list_presets:
                if model is not None:
                    # the table of every preset came, and MODEL's sizing did not, silently
                    raise InputError(f"lists the presets: not with a MODEL ({model!r}); drop "
                                     "--list to size it", field="list")
                output.emit(list_view(), as_json=as_json)
                return
            from kvcore.engine.sched_limits import serve_limits
            from kvcore.engine.serve_defaults import BATCH_OPTIONS, rows_text
            from kvcore.sizing.resolve import resolve_kv_cache_config

            bs = 16 if block_size is None else block_size
            # vLLM's value names (kvcore.vllm_values): its unmodelled ones refused, saying why
            kv_dtype = vllm_kv_dtype(kv_cache_dtype)
            model_dtype = None if dtype is None or dtype.strip().lower() == "auto" else dtype
            if kv_offloading_backend is not None:
                check_backend(kv_offloading_backend)
            batches = concurrent_batches(async_scheduling, max_concurrent_batches)
            if kv_offloading_block_size is not None and kv_offloading_size is None:
                # the chunk size of a tier that is not there: it was dropped without a word
                raise InputError("needs --kv-offloading-size (the CPU tier it sizes the chunks "
                                 "of)", field="kv_offloading_block_size")

            def sized(budget: int) -> Any:
                try:
                    return _sized(budget)
                except InputError as err:
                    if err.field != "model" or err.path is not None:
                        raise
                    # `model` is MODEL here (an argument) or --model-config, not "--model"
                    raise InputError(err.message, field="model_config" if model_config and not
                                     model else "model_argument") from None

            def _sized(budget: int) -> Any:
                return resolve_kv_cache_config(
                    model, model_config=model_config, layers=layers, kv_heads=kv_heads,
                    head_dim=head_dim, dtype=model_dtype, sliding_window=sliding_window,
                    sliding_layers=sliding_layers, attention_chunk_size=attention_chunk_size,
                    chunked_layers=chunked_layers, gpu_memory_gib=gpu_memory_gib,
                    gpu_memory_utilization=gpu_memory_utilization, weights_gib=weights_gib,
                    activation_gib=activation_gib, kv_cache_dtype=kv_dtype,
                    block_size=bs, max_model_len=max_model_len,
                    max_num_batched_tokens=budget,
                    max_concurrent_batches=batches, num_blocks=num_blocks,
                    tensor_parallel_size=tensor_parallel_size, disable_hybrid=disable_hybrid,
                    pad_pages=pad_pages, enable_prefix_caching=enable_prefix_caching,
                    prefix_match_unit=prefix_match_unit)

            # the scheduler options' own checks first, in the replay's words (the sizing
            # layer's differ); the budget is the given one or the default here
            first = serve_limits(max_num_seqs=max_num_seqs,
                                 max_num_batched_tokens=max_num_batched_tokens,
                                 max_model_len=max_model_len,
                                 enable_chunked_prefill=enable_chunked_prefill
                                 ).max_num_batched_tokens
            result = sized(first)
            # vLLM's start-up scheduler defaults and refusals on the model's max_model_len,
            # as a replay applies them (then the pool is sized again on the budget, as vLLM
            # sizes it after its defaults: the windows' in-flight tokens follow it)
            limits = serve_limits(max_num_seqs=max_num_seqs,
                                  max_num_batched_tokens=max_num_batched_tokens,
                                  max_model_len=result.ctx.max_model_len,
                                  enable_chunked_prefill=enable_chunked_prefill)
            if limits.max_num_batched_tokens != first:
                result = sized(limits.max_num_batched_tokens)
            view = sizing_view(result, gpu_memory_gib=gpu_memory_gib,
                               gpu_memory_utilization=gpu_memory_utilization,
                               activation_gib=activation_gib, tp=tensor_parallel_size)
            view.data = {k: v for key, value in view.data.items() for k, v in (
                ((key, value), ("max_num_seqs", limits.max_num_seqs),
                 ("enable_chunked_prefill", enable_chunked_prefill))
                if key == "max_num_batched_tokens" else ((key, value),))}
            # (config names no GPU: where a value is not given it starts from SchedulerConfig's
            # default, which vllm serve on a GPU does not: `kvcore.engine.serve_defaults`)
            defaults = ("" if max_num_seqs is not None and max_num_batched_tokens is not None
                        else " (from SchedulerConfig's defaults; vllm serve's follow its GPU: "
                        f"{rows_text(*BATCH_OPTIONS)})")
            view.text.insert(0, f"scheduler: max_num_seqs {limits.max_num_seqs:,}, "
                             f"max_num_batched_tokens {limits.max_num_batched_tokens:,}, "
                             f"chunked prefill {'on' if enable_chunked_prefill else 'off'}"
                             f"{defaults}")
            if prefix_match_unit is not None:
                view.text.append(prefix_match_line(view.data["prefix_match"]))
            mla = result.geometry.mla is not None
            if kv_offloading_size is not None:
                from kvcore.offload.config import tier_copies

                # vLLM's CPU tier keeps one copy of a latent every TP rank holds whole
                # (at the groups' block size: a Mamba hybrid's is the model's, 1,312 tokens for
                # Nemotron-Nano, not --block-size's 16)
                add_cpu_tier(view, kv_offloading_size, kv_offloading_block_size,
                             view.data["block_size"], tier_copies(tensor_parallel_size, mla))
            from kvcli.config_warnings import config_warnings
            from kvcli.given_params import given_params

            given = {p.name for p in given_params(ctx)}
            for name, value in (("async_scheduling", async_scheduling),
                                ("enable_chunked_prefill", enable_chunked_prefill)):
                if value is False and name in given:
                    given ^= {name, f"no_{name}"}                       # the flag as typed
            warnings = config_warnings(result, given, gpu_memory_gib=gpu_memory_gib,
                                       max_model_len=max_model_len, block_size=bs,
                                       block_size_given=block_size is not None,
                                       enable_prefix_caching=enable_prefix_caching,
                                       offloading=kv_offloading_size is not None)
            for w in warnings:
                output.warn(w)
            view.data["warnings"] = warnings
            output.emit(view, as_json=as_json)

        output.run(go)


def concurrent_batches(async_scheduling: bool | None, given: int | None) -> int:
    """Batches in flight: --max-concurrent-batches, or vLLM's --[no-]async-scheduling (on: 2,
    off: 1; neither: 2, vLLM's on a GPU); both, they must agree."""
    from kvcore.errors import InputError

    implied = None if async_scheduling is None else 2 if async_scheduling else 1
    if given is not None and implied is not None and given != implied:
        flag = "--async-scheduling" if async_scheduling else "--no-async-scheduling"
        raise InputError(f"{given} disagrees with {flag} ({implied} batch"
                         f"{'es' if implied > 1 else ''} in flight); give one",
                         field="max_concurrent_batches")
    return given if given is not None else implied if implied is not None else 2


def _short_layers(names: list[str]) -> str:
    idx = [n.rsplit(".", 1)[-1] for n in names]
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
    if m["gpu_memory_gib"] is not None:
        text.append(
            f"available KV memory = {m['gpu_memory_gib']:g} GiB x 2^30 x "
            f"{m['gpu_memory_utilization']:g} - weights {m['weights_gib']:.2f} GiB"
            + (" (estimated)" if m["weights_estimated"] else "")
            + (f" - activations {m['activation_gib']:g} GiB" if m["activation_gib"] else "")
            + f" = {m['available_kv_cache_bytes']:,} bytes ({m['available_kv_cache_gib']:.2f} GiB)"
            + (f" per worker (tensor parallel {tp})" if tp > 1 else ""))
    widest = max((g["num_layers"] for g in data["groups"]), default=0)
    text.append(f"bytes per block = {widest} layers x page = {data['bytes_per_block']:,}")
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
    text.append(f"KV cache capacity = {data['kv_cache_tokens']:,} tokens "
                f"(vLLM's 'GPU KV cache size'); pool = {data['pool_tokens']:,} token slots")
    text.append(f"largest max_model_len that fits = {data['max_model_len_fits']:,}")
    return View(data, tables=[groups], text=text)


def add_cpu_tier(view: Any, gib: float, offload_block_size: int | None, block_size: int,
                 tp: int) -> None:
    """The CPU tier's size as vLLM 0.33 derives it (`kvcore.offload.config`), into the view:
    JSON key ``cpu_offload`` and a few lines."""
    from kvcore.errors import InputError
    from kvcore.offload.config import blocks_per_chunk_of, chunk_bytes, chunks_of

    if not gib > 0:
        raise InputError(f"must be a number > 0, got {gib}", field="kv_offloading_size")
    bpc = blocks_per_chunk_of(offload_block_size, block_size, field="kv_offloading_block_size")
    per_block = view.data["bytes_per_block"] * tp      # a chunk holds every rank's share
    per_chunk = chunk_bytes(per_block, bpc)
    n = chunks_of(gib, per_chunk)
    tier = {"kv_offloading_size_gib": gib, "cpu_bytes_to_use": int(gib * 2**30),  # (vLLM: a float)
            "blocks_per_chunk": bpc, "tokens_per_chunk": bpc * block_size,
            "kv_bytes_per_chunk": per_chunk, "cpu_num_chunks": n,
            "cpu_kv_cache_size_tokens": n * bpc * block_size,
            "cpu_kv_cache_size_bytes": n * per_chunk}
    view.data["cpu_offload"] = tier
    view.text.append(
        f"CPU tier (--kv-offloading-size {gib:g}) = int({gib:g} x 2^30) // "
        f"{per_chunk:,} bytes a chunk ({bpc} block{'s' if bpc > 1 else ''}"
        f"{f' x {tp} ranks' if tp > 1 else ''}, rounded up to 4 KiB) = {n:,} chunks = "
        f"{n * bpc * block_size:,} tokens")


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
