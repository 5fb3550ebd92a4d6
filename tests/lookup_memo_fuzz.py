"""Random cases for the lookup memo's differential fuzz (`test_lookup_memo_fuzz.py`; not a test
module): a seed draws a configuration and a token-id trace, and `run_case` replays it with the
memo (audited: `lookup_memo_audit.audit`, plus every watch checked to hold each hash its lookup
read) and without it, and requires the same bytes (step lines, request lines, the event stream
drawn for the case, the summary but its wall time).

What a seed draws: one group (full, sliding window, chunked local) or several (full attention
beside sliding windows, chunked local or Mamba in either order, groups of other block sizes,
sliding beside Mamba without full attention) or a model preset (gpt-oss-20b, gemma-3-27b,
jamba-v0.1, qwen3-next-80b-a3b); pools from about one request's blocks to plenty; budgets of
one block to 2,048 tokens, 1 to 32 sequences, chunked prefill on or off, a long-prefill
threshold, a watermark, the full-prompt reservation on or off; FCFS or priority; sync or async;
step, ignored or timestamp arrivals; a CPU tier (a few chunks or a small GiB size, LRU or ARC,
slow loads and stores; not over one windowed group, see `draw_config`) or none; prefix caching off; `prefix_match_unit` (finer than a block:
partial hits, no memo); retention intervals; engine or cache mode; the replay's fast-forward and
decode windows on or off. Traces mix conversations (each turn repeats the one before, arriving
while it decodes), shared prefixes, identical prompts at one step (two blocks under one hash),
cache salts, LoRA names and priorities."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from lookup_memo_audit import audit
from replay_bytes import replay_bytes

from kvcore.engine.options import ReplayOptions
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.lookup_memo import LookupMemo

MODELS = {"gpt-oss-20b": (16, 2), "gemma-3-27b": (16, 7), "jamba-v0.1": (80, 8),
          "qwen3-next-80b-a3b": (576, 4)}      # (block size, groups)
STACKS = ("full", "full", "swa", "chunk", "full+swa", "swa+full", "full+swa+swa", "full+chunk",
          "full+mamba", "mamba+full", "swa+mamba", "mamba", "chunk+full", "full+full", "model",
          "model")


def _groups(stack: str, bs: int, rng: random.Random) -> list[dict] | None:
    def swa() -> dict:
        return {"type": "sliding_window", "sliding_window": rng.randrange(1, 3 * bs + 2)}

    def mamba() -> list[dict]:
        ckpt = rng.random() < 0.5
        return [{"type": "mamba", "checkpoint": ckpt} for _ in range(rng.randrange(1, 4))]
    full = {"type": "full"}
    chunk = {"type": "chunked_local", "attention_chunk_size": bs * rng.randrange(1, 4)}
    return {"full": None, "swa": [swa()], "chunk": [chunk], "full+swa": [full, swa()],
            "swa+full": [swa(), full], "full+swa+swa": [full, swa(), swa()],
            "full+chunk": [full, chunk], "full+mamba": [full, *mamba()],
            "mamba+full": [*mamba(), full], "swa+mamba": [swa(), *mamba()], "mamba": mamba()[:1],
            "chunk+full": [chunk, full], "full+full": [full, full]}[stack]


def draw_stack(rng: random.Random) -> tuple[dict, dict, int, int, bool, bool]:
    """(config line, options outside it, block size, groups, Mamba beside full attention,
    a sliding-window or Mamba group)."""
    stack = rng.choice(STACKS)
    cfg: dict[str, Any] = {}
    opts: dict[str, Any] = {}
    if stack == "model":
        model = rng.choice(sorted(MODELS))
        bs, ngroups = MODELS[model]
        opts["model"] = model
        return cfg, opts, bs, ngroups, model in ("jamba-v0.1", "qwen3-next-80b-a3b"), True
    bs = rng.choice([2, 4, 8, 16])
    groups = _groups(stack, bs, rng)
    cfg["block_size"] = bs
    if groups:
        cfg["groups"] = groups
    return (cfg, opts, bs, len(groups) if groups else 1, "full+" in stack and "mamba" in stack
            or stack == "mamba+full", "swa" in stack or "mamba" in stack)


def draw_config(rng: random.Random, blocks: Any) -> tuple[dict, dict, int]:
    """(the trace's config line, the options outside it, block size); ``blocks``: a callable
    giving the trace drawn at a block size and its longest request in blocks."""
    cfg, opts, bs, ngroups, mamba, windowed = draw_stack(rng)
    per_req = ngroups * blocks(bs)
    cfg["num_blocks"] = max(4, int(per_req * rng.choice([0.5, 0.8, 1, 1.3, 2, 3, 6, 30])))
    cfg["max_num_seqs"] = rng.choice([1, 2, 3, 4, 8, 32])
    cfg["max_num_batched_tokens"] = max(cfg["max_num_seqs"], rng.choice(
        [max(8, bs), 2 * bs, 4 * bs, 8 * bs, 32, 128, 512, 2048]))
    cfg["policy"] = rng.choice(["fcfs", "priority"])
    cfg["async_scheduling"] = rng.random() < 0.5
    if rng.random() < 0.15:
        cfg["enable_chunked_prefill"] = False
    if rng.random() < 0.15:
        cfg["long_prefill_token_threshold"] = rng.choice([bs, 3 * bs, 50])
    if rng.random() < 0.15:
        cfg["watermark"] = rng.choice([0.01, 0.05, 0.2])
    if rng.random() < 0.3:
        cfg["scheduler_reserve_full_isl"] = rng.random() < 0.5
    if rng.random() < 0.1:
        cfg["enable_prefix_caching"] = False
    # finer than a Mamba block beside full attention: partial hits (no memo); else the block
    finer = [u for u in (bs // 2, bs // 4, bs // 5) if u and bs % u == 0] if mamba else []
    if rng.random() < (0.5 if finer else 0.05):
        cfg["prefix_match_unit"] = rng.choice(finer + [bs])
    tier = rng.random() < 0.3
    obs = bs * rng.choice([1, 1, 2, 4])
    if windowed and rng.random() < 0.4:
        cfg["prefix_cache_retention_interval"] = rng.choice(([] if tier else [None]) + [
            0, obs, 4 * obs])
    if tier:
        if rng.random() < 0.8:
            cfg["kv_offloading_size_chunks"] = rng.choice([1, 2, 4, 8, 32])
            cfg["offload_block_size"] = obs
        else:
            cfg["kv_offloading_size"] = rng.choice([0.01, 0.05, 0.3])
        cfg["eviction_policy"] = rng.choice(["lru", "arc"])
        cfg["load_steps"] = rng.randrange(1, 4)
        cfg["store_steps"] = rng.randrange(1, 4)
        if rng.random() < 0.3:
            cfg["offload_prompt_only"] = False
    if rng.random() < 0.1:
        cfg["max_model_len"] = bs * rng.randrange(6, 20)
    if rng.random() < 0.1:
        cfg["hash_algo"] = "sha256_cbor"
    opts["mode"] = "cache" if rng.random() < 0.08 else "engine"
    opts["arrivals"] = rng.choice(["step", "step", "step", "ignore", "timestamp"])
    return cfg, opts, bs


def draw_trace(rng: random.Random, bs: int) -> list[dict]:
    """Requests: conversations, shared prefixes, identical prompts, salts, LoRA, priorities."""
    def toks(n: int) -> list[int]:
        return [rng.randrange(1, 999) for _ in range(n)]
    prefixes = [toks(bs * rng.randrange(1, 8) + rng.randrange(bs)) for _ in range(3)]
    out: list[dict] = []
    step = 0
    for c in range(rng.randrange(3, 9)):
        step += rng.randrange(0, 6)
        base = rng.choice(prefixes)
        prompt = base[:rng.randrange(len(base) + 1)] + toks(rng.randrange(1, 5 * bs))
        extra: dict[str, Any] = {}
        if rng.random() < 0.2:
            extra["cache_salt"] = rng.choice(["s1", "s2"])
        if rng.random() < 0.2:
            extra["lora"] = rng.choice(["a", "b"])
        turns = rng.choice([1, 1, 2, 3, 4])
        t_step = step
        for t in range(turns):
            n_out = rng.randrange(1, 4 * bs + 8)
            o = toks(n_out)
            for k in range(2 if rng.random() < 0.15 else 1):   # identical prompts at one step
                out.append({"id": f"c{c}t{t}k{k}", "prompt_token_ids": prompt,
                            "output_token_ids": o, "output_length": n_out,
                            "arrival_step": t_step, "priority": rng.randrange(3), **extra})
            prompt = prompt + o[:rng.randrange(n_out // 2, n_out + 1)] + toks(rng.randrange(1, bs
                                                                                         + 3))
            t_step += rng.randrange(1, 8)   # the next turn arrives while this one decodes
    out.sort(key=lambda r: r["arrival_step"])
    for r in out:
        r["timestamp"] = r["arrival_step"] * 37.0
    return out


def draw_case(seed: int, tmp: Path) -> tuple[str, ReplayOptions, str, bool, bool, str]:
    """(trace path, options, events format, fast-forward, decode windows, a one-line summary)."""
    rng = random.Random(seed)
    reqs: list[dict] = []

    def blocks(bs: int) -> int:     # the trace, drawn at the stack's block size
        reqs.extend(draw_trace(random.Random(rng.random()), bs))
        return max(-(-(len(r["prompt_token_ids"]) + r["output_length"]) // bs) for r in reqs)
    cfg, extra, bs = draw_config(rng, blocks)
    lines = [json.dumps({"config": cfg})] + [json.dumps(r) for r in reqs]
    path = tmp / f"fuzz{seed}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    # (max_steps: a pool this small may preempt back and forth for ever, as vLLM would)
    opts = ReplayOptions(skip_bad=True, max_steps=3000, **extra, given=frozenset(extra))
    # (our jsonl events do not model partial-block hits: kvcli refuses them with a finer unit)
    events = rng.choice(["vllm", "none"] if cfg.get("prefix_match_unit", bs) < bs else
                        ["jsonl", "vllm", "none"])
    ff, dw = rng.random() < 0.7, rng.random() < 0.7
    what = f"seed {seed}: {json.dumps({**cfg, **extra})} events={events} ff={ff} dw={dw}"
    return str(path), opts, events, ff, dw, what


def check_watches(monkeypatch, seen: Counter) -> None:
    """Each watch the memo sets holds every hash a full lookup at that moment reads."""
    real = LookupMemo.note
    coords: dict[int, Any] = {}     # id(pool) -> its coordinator

    def note(self, request, cap, answer, longest):
        before = self.watch
        real(self, request, cap, answer, longest)
        if self.watch is None or self.watch is before:
            return
        pool = self.pool
        read: set[bytes] = set()
        cmap = pool.cached_block_hash_to_block
        saved = cmap.by_group

        class Reads(dict):
            def get(self, key, default=None):
                read.add(key)
                return super().get(key, default)
        cmap.by_group = [Reads(m) for m in saved]
        try:
            got = coords[id(pool)].find_longest_cache_hit(request.block_hashes, cap)
        finally:
            cmap.by_group = saved
        assert [[id(b) for b in g] for g in got[0]] == \
            [[id(b) for b in g] for g in answer[0].blocks], "the re-lookup differs"
        assert read <= self.watch, f"read outside the watch: {len(read - self.watch)} hashes"
        seen["watches"] += 1
    monkeypatch.setattr(LookupMemo, "note", note)
    init = KVCacheManager.__init__

    def kvm_init(self, *a, **kw):
        init(self, *a, **kw)
        coords[id(self.block_pool)] = self.coordinator
    monkeypatch.setattr(KVCacheManager, "__init__", kvm_init)


def run_case(seed: int, tmp: Path, monkeypatch) -> Counter:
    """Replay the seed's case with the memo (audited) and without: the same bytes. Its counts."""
    trace, opts, events, ff, dw, what = draw_case(seed, tmp)
    seen: Counter = Counter()
    with monkeypatch.context() as m:
        audit(m, seen)
        check_watches(m, seen)
        on = replay_bytes(trace, opts, events, m, counting=(KVCacheManager, "free"),
                          fast_forward=ff, decode_windows=dw)[0]
    with monkeypatch.context() as m:
        m.setattr(KVCacheManager, "memo_lookups", False)
        off = replay_bytes(trace, opts, events, m, counting=(KVCacheManager, "free"),
                           fast_forward=ff, decode_windows=dw)[0]
    for name, a, b in zip(("steps", "requests", "events", "summary"), on, off):
        assert a == b, f"{name} differ: {what}"
    return seen
