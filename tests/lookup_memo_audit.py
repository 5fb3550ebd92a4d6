"""Replays with the lookup memo (`kvcore.lookup_memo`) audited and compared with replays without
it, for `test_lookup_memo.py` (not a test module).

The audit runs a full lookup beside every `get_computed_blocks` call and requires the same
answer: the same block objects per group, the same hit and boundary. It counts the answers the
memo kept, and, by the pool method that dropped a watch, the refreshes."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from replay_bytes import replay_bytes

from kvcore.block_pool import BlockPool
from kvcore.engine.options import ReplayOptions
from kvcore.kv_cache_manager import KVCacheManager

# The pool methods that may drop a watch (a cache or an eviction under a watched hash).
DROPPERS = ("cache_full_blocks", "get_new_blocks", "_drop_hash", "reset_prefix_cache")


def audit(monkeypatch, seen: Counter) -> None:
    """Check every lookup against a full one; count into ``seen`` ("kept": answers the memo
    gave; "lookups"; a pool method's name: the watches it dropped)."""
    real = KVCacheManager.get_computed_blocks

    def audited(self, request, max_cache_hit_length=None):
        cap = request.num_tokens - 1 if max_cache_hit_length is None else max_cache_hit_length
        memo = self.lookup_memo
        if memo is not None and memo.holds(request, cap):
            seen["kept"] += 1
        seen["lookups"] += 1
        got = real(self, request, max_cache_hit_length)
        if self.enable_caching and not request.skip_reading_prefix_cache:
            blocks, n, uncached = self.coordinator.find_longest_cache_hit(request.block_hashes,
                                                                          cap)
            want = ([[id(b) for b in g] for g in blocks], n, n + uncached if uncached else 0)
            assert ([[id(b) for b in g] for g in got[0].blocks], got[1], got[2]) == want, \
                request.request_id
        return got

    monkeypatch.setattr(KVCacheManager, "get_computed_blocks", audited)
    for name in DROPPERS:
        method = getattr(BlockPool, name)

        def watched(self, *a, _method=method, _name=name, **kw):
            before = self.lookup_watch
            out = _method(self, *a, **kw)
            if before is not None and self.lookup_watch is None:
                seen[_name] += 1
            return out
        monkeypatch.setattr(BlockPool, name, watched)


def memo_on_off(trace: str, opts: ReplayOptions, events: str, monkeypatch) -> Counter:
    """Replay with the memo (audited) and without: every output the same bytes. The counts of
    the audited replay."""
    seen: Counter = Counter()
    with monkeypatch.context() as m:
        audit(m, seen)
        on, _ = replay_bytes(trace, opts, events, m, counting=(KVCacheManager, "free"))
    with monkeypatch.context() as m:
        m.setattr(KVCacheManager, "memo_lookups", False)
        off, _ = replay_bytes(trace, opts, events, m, counting=(KVCacheManager, "free"))
    assert on[3] == off[3]
    assert on[0] == off[0] and on[1] == off[1] and on[2] == off[2]
    return seen


def chain_trace(path: Path, rng: random.Random, cfg: dict) -> str:
    """Conversations of token ids: each turn's prompt is the turn before's prompt, most of its
    outputs (given, so the next prompt repeats them) and a few new tokens, and arrives while
    that turn still runs, so blocks are cached under a waiting head's hashes as it waits. Cache
    salts, LoRA names and priorities vary by conversation."""
    lines = [json.dumps({"config": cfg})]
    shared = [rng.randrange(1, 999) for _ in range(30)]
    for c in range(8):
        prompt = shared[:rng.randrange(0, 30)] + [rng.randrange(1, 999)
                                                  for _ in range(rng.randrange(5, 60))]
        step = rng.randrange(0, 25)
        extra = {}
        if rng.random() < 0.3:
            extra["cache_salt"] = rng.choice(["s1", "s2"])
        if rng.random() < 0.3:
            extra["lora"] = rng.choice(["a", "b"])
        for t in range(4):
            out = [rng.randrange(1, 999) for _ in range(rng.randrange(4, 70))]
            lines.append(json.dumps({"id": f"c{c}t{t}", "prompt_token_ids": prompt,
                                     "output_token_ids": out, "output_length": len(out),
                                     "arrival_step": step, "priority": rng.randrange(3),
                                     **extra}))
            prompt = prompt + out[:rng.randrange(len(out) // 2, len(out) + 1)] + [
                rng.randrange(1, 999) for _ in range(rng.randrange(1, 20))]
            step += rng.randrange(1, 12)
    path.write_text("\n".join(lines) + "\n")
    return str(path)
