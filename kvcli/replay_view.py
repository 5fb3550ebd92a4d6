"""`kvcli replay`'s summary for people: the two-column table beside the JSON document
(`summary_view`), and the lines it is built from."""

from __future__ import annotations

from kvcore.engine.scheduler_io import max_concurrent_batches

# (sliding group, Mamba group) -> what retention 0 keeps, what a positive interval keeps
RETENTION_KEPT = {
    (True, False): ("sliding windows keep reachable tails only", "one window tail"),
    (False, True): ("Mamba keeps reachable states only", "one Mamba state"),
    (True, True): ("sliding windows and Mamba keep reachable tails and states only",
                   "one window tail and one Mamba state"),
}


def groups_text(groups: list[dict]) -> str:
    """The pool's groups in a line: runs of equal groups counted, e.g. '5 sliding_window
    (1,024 tokens) + 1 full_attention'."""
    runs: list[list] = []
    for g in groups:
        name = g["type"] + (f" ({g['sliding_window']:,} tokens)" if g["sliding_window"] else "")
        if runs and runs[-1][1] == name:
            runs[-1][0] += 1
        else:
            runs.append([1, name])
    return " + ".join(f"{n} {name}" for n, name in runs)


def scheduling_text(d: dict) -> str:
    """The scheduling row: sync or async, the batch queue, speculative decoding's outcome."""
    cfg = d["config"]
    depth = max_concurrent_batches(cfg["async_scheduling"], cfg.get("pipeline_parallel_size", 1))
    text = f"async (batch queue of {depth})" if cfg["async_scheduling"] else \
        "sync" if depth == 1 else f"sync (batch queue of {depth})"
    sd = d.get("spec_decode")
    if sd:
        rate = "-" if sd["acceptance_rate"] is None else f"{sd['acceptance_rate']:.1%}"
        text += (f"; {cfg['spec_method']} drafts x {cfg['num_speculative_tokens']}: {rate} of "
                 f"{sd['num_draft_tokens']:,} accepted (model: {cfg['spec_acceptance_rate']:g} "
                 "each)")
    return text


def summary_view(summary):
    """The summary as a View: the JSON document and a two-column table for people."""
    from kvcli.output import Table, View

    d = summary.to_dict()
    rows = [
        ("trace", f"{d['trace']} ({d['format']})"),
        ("mode", d["mode"]),
        ("requests", d["requests"]),
        ("rejected", d["rejected"]),
        ("prompt tokens", d["prompt_tokens"]),
        ("hit tokens", d["hit_tokens"]),
        ("hit rate (tokens)", round(d["hit_rate"], 5)),
        ("hit rate (mean per request)", round(d["request_hit_rate_mean"], 5)),
    ]
    if not d["prompt_content"]:
        # a 0 here is the trace's, not the cache's: say so beside it
        rows.append(("prompt content", "lengths only (hit rate 0 by construction)"))
    if d["warmup_requests"]:
        rows.append(("warm-up requests (not counted)", d["warmup_requests"]))
    if d["mode"] == "engine":
        rows += [("preemptions", d["preemptions"]),
                 ("recomputed tokens", d["recomputed_tokens"]),
                 ("re-admissions: prompt / hit tokens",
                  f"{d['preempted_prompt_tokens']:,} / {d['preempted_hit_tokens']:,}")]
    rows += [("evictions", d["evictions"]),
             ("peak KV usage", f"{d['peak_usage']:.2%}")]
    if d["mode"] == "engine":
        # (mean beside peak; None when interrupted before the end: measured over the whole run)
        rows += [("mean KV usage", "-" if d["mean_usage"] is None else f"{d['mean_usage']:.2%}"),
                 ("scheduling", scheduling_text(d)),
                 ("steps", d["steps"]),
                 ("simulated time (s)", d["sim_time_s"])]
    cfg = d["config"]
    if cfg["model"] or cfg["model_config"] or cfg["groups"]:
        rows.append(("KV cache groups", groups_text(d["groups"])))
    # retention applies to sliding-window and Mamba groups only (a full-attention model has none)
    kinds = {g["type"] for g in d["groups"]}
    kept = RETENTION_KEPT.get((("sliding_window" in kinds), ("mamba" in kinds)))
    if kept is not None:
        r = cfg["prefix_cache_retention_interval"]
        rows.append(("prefix cache retention", "dense (every full block)" if r is None else
                     f"0 ({kept[0]})" if r == 0 else f"{kept[1]} per {r:,} tokens"))
    off = d.get("offload")
    if off:
        w = off["load_wait_steps"]
        # over groups of several block sizes each group's chunk is one of its own blocks (the
        # summary's tokens_per_chunk is group 0's, as vLLM's first GroupOffloadConfig)
        per = [g["block_size"] for g in d["groups"]]
        tpc = "/".join(map(str, per)) if len(set(per)) > 1 else off["tokens_per_chunk"]
        rows += [
            ("CPU tier", (f"{off['cpu_num_chunks']:,} chunks x {tpc} tokens "
                          f"({off['kv_offloading_size_gib']:g} GiB, {cfg['eviction_policy']})")),
            ("hit rate with the CPU tier (tokens)", round(off["hit_rate_with_cpu"], 5)),
            ("hit tokens: GPU / CPU (every lookup)",
             f"{off['gpu_hit_tokens']:,} / {off['cpu_hit_tokens']:,}"),
            ("loaded: jobs / chunks / GiB", (f"{off['load_jobs']:,} / {off['chunks_loaded']:,} / "
                                             f"{off['bytes_loaded'] / 2**30:.3f}")),
            ("stored: jobs / chunks / GiB", (f"{off['store_jobs']:,} / {off['chunks_stored']:,} / "
                                             f"{off['bytes_stored'] / 2**30:.3f}")),
            ("failed stores (vLLM's allocation failures)", off["alloc_failures"]),
            ("CPU evictions", off["cpu_evictions"]),
            ("CPU chunks used: peak / end", f"{off['max_cpu_used']:,} / {off['cpu_used_end']:,}"),
            ("steps waiting for a load: p50 / p99",
             "none" if not w["count"] else f"{w['p50']} / {w['p99']} ({w['count']:,} loads)"),
        ]
    # a model's groups may page larger blocks than --block-size (Jamba's mamba-sized pages)
    sizes = "/".join(f"{b:,}" for b in sorted({g["block_size"] for g in d["groups"]})) \
        or d["block_size"]
    rows += [("blocks", f"{d['num_blocks']:,} x {sizes} tokens"),
             ("wall time (s)", d["wall_time_s"])]
    if d["events"]:
        rows.append(("events written", d["events"]))
    if d["interrupted"]:
        rows.append(("INTERRUPTED", "partial results"))
    cfg = d["config"]
    caption = ", ".join(f"{k}={cfg[k]}" for k in (
        "max_num_seqs", "max_num_batched_tokens", "max_model_len", "policy", "arrivals")
        if d["mode"] == "engine") or None
    tables = [Table("kvcli replay", ("", "value"), rows, caption=caption)]
    if d["latency"] is not None:
        from kvcli.latency_view import latency_table

        tables.append(latency_table(d["latency"]))
    return View(d, tables=tables)

