"""Lean events (`kvcore/lean_events.py`): an `EventIndex` fed a pool's `LeanBatch`es holds
exactly what one fed its vLLM events holds, after every step, and a cluster whose replicas'
events nobody writes decides exactly as one that writes them."""

from __future__ import annotations

import io
from collections import Counter
from typing import ClassVar

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvtest_helpers import make_manager, make_request
from test_cluster import _trace

from kvcore.cluster.event_index import EventIndex
from kvcore.cluster.run import ClusterOptions, run_cluster
from kvcore.engine.options import ReplayOptions
from kvcore.kv_events import BlockStored, hash_to_int
from kvcore.lean_events import LeanBatch

GROUPS = [("full",), ("full", ("swa", 8)), (("swa", 12),), ("full", "full", ("swa", 5))]


def _map_counts(mgr) -> Counter:
    """The pool's hash map as the index should count it: entries per 64-bit hash."""
    return Counter(hash_to_int(h) for h, _, blks in
                   mgr.block_pool.cached_block_hash_to_block.items() for _ in blks)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lean_batches_count_what_vllm_events_count(data):
    """Two managers, one with vLLM's events and one lean, driven alike by random ops (hits,
    evictions, duplicate blocks, `evict_blocks`, resets): after each op the two indexes are
    equal, and equal to the pool's map."""
    bs = data.draw(st.sampled_from([2, 4]), label="block_size")
    groups = data.draw(st.sampled_from(GROUPS), label="groups")
    num_blocks = data.draw(st.integers(2, 40), label="num_blocks")
    full, lean = (make_manager(num_blocks, groups=groups, bs=bs, max_model_len=64,
                               enable_kv_cache_events=True) for _ in range(2))
    lean.block_pool.lean_events = True
    index = EventIndex(2)           # replica 0: fed vLLM's events, replica 1: lean batches
    prefixes = [[1, 2, 3, 4, 5, 6, 7, 8], [9, 9, 9, 9, 1, 2], [1, 2, 3, 4, 7, 7]]
    live: dict[str, tuple] = {}
    for step in range(data.draw(st.integers(1, 40), label="steps")):
        op = data.draw(st.sampled_from(["new", "new", "prefill", "decode", "decode", "free",
                                        "evict", "reset"]))
        if op == "new":
            prompt = data.draw(st.sampled_from(prefixes)) + data.draw(
                st.lists(st.integers(0, 3), min_size=0, max_size=12))
            reqs = tuple(make_request(f"r{step}", prompt, bs=bs) for _ in range(2))
            got = [m.get_computed_blocks(r) for m, r in zip((full, lean), reqs, strict=True)]
            hit = got[0][1]
            n = data.draw(st.integers(1, len(prompt) - hit)) if len(prompt) > hit else 0
            if n and all(m.allocate_slots(r, n, hit, g[0]) is not None
                         for m, r, g in zip((full, lean), reqs, got, strict=True)):
                for r in reqs:
                    r.num_computed_tokens = hit + n
                live[reqs[0].request_id] = reqs
        elif op in ("prefill", "decode") and live:
            reqs = live[data.draw(st.sampled_from(sorted(live)))]
            r0 = reqs[0]
            if r0.num_computed_tokens < r0.num_tokens:
                n = data.draw(st.integers(1, r0.num_tokens - r0.num_computed_tokens))
            elif r0.num_tokens < 60:
                tok = data.draw(st.integers(0, 3))
                for r in reqs:
                    r.append_output_token_ids(tok)
                n = 1
            else:
                continue
            ok = [m.allocate_slots(r, n) is not None
                  for m, r in zip((full, lean), reqs, strict=True)]
            assert ok[0] == ok[1]
            if ok[0]:
                for r in reqs:
                    r.num_computed_tokens += n
        elif op == "free" and live:
            for m, r in zip((full, lean), live.pop(data.draw(st.sampled_from(sorted(live)))),
                            strict=True):
                m.free(r)
        elif op == "evict":
            ids = set(data.draw(st.lists(st.integers(0, num_blocks - 1), max_size=4)))
            full.evict_blocks(ids)
            lean.evict_blocks(ids)
        elif op == "reset":
            assert full.reset_prefix_cache() == lean.reset_prefix_cache()
        events, batch = full.take_events(), lean.take_events()
        assert all(isinstance(b, LeanBatch) for b in batch) and len(batch) <= 1
        # a batch exactly when vLLM's events change a count (an empty BlockStored does not)
        assert bool(batch) == any(not isinstance(e, BlockStored) or e.block_hashes
                                  for e in events)
        index.apply(0, events)
        index.apply(1, batch)
        assert index.gpu[0] == index.gpu[1] == _map_counts(full) == _map_counts(lean)
        assert not index.cpu[0] and not index.cpu[1]


class _Snap:
    seen: ClassVar[list] = []


def _snapshot_class():
    """A round-robin router that records, at each decision, the whole event index."""
    from kvcore.cluster.router import Decision, Router

    class Snap(Router):
        name = "snap"
        needs_events = True

        def route(self, req, view):
            _Snap.seen.append(([dict(c) for c in view.events.gpu],
                               [dict(c) for c in view.events.cpu]))
            return Decision(req.index % self.n, "round_robin")
    return Snap


def _open_events():
    def open_events(router, replica, kind):
        buf = io.BytesIO()
        buf.close = lambda: None
        return buf
    return open_events


SWA = ({"type": "full"}, {"type": "sliding_window", "sliding_window": 32})
OPTS = {
    "async": ReplayOptions(num_blocks=40, block_size=16),
    "sync-lag": ReplayOptions(num_blocks=40, block_size=16, async_scheduling=False),
    "cache": ReplayOptions(num_blocks=40, block_size=16, mode="cache"),
    "cpu-tier": ReplayOptions(num_blocks=30, block_size=16, kv_offloading_size_chunks=40),
    "hybrid-sparse": ReplayOptions(num_blocks=60, block_size=16, groups=SWA,
                                   prefix_cache_retention_interval=0),
}


@pytest.mark.parametrize("case", sorted(OPTS))
def test_cluster_with_lean_events_decides_as_with_vllm_events(tmp_path, monkeypatch, case):
    """Every event-fed router, and the whole index at every decision: the same with vLLM's
    events written (the index reads them) as with nothing written (the index reads lean
    batches)."""
    from kvcore.cluster import router as rmod

    monkeypatch.setitem(rmod.REGISTRY, "snap", _snapshot_class())
    kinds: set[str] = set()         # what the index was fed
    apply = EventIndex.apply

    def spy(self, replica, events):
        kinds.update(type(e).__name__ for e in events)
        apply(self, replica, events)
    monkeypatch.setattr(EventIndex, "apply", spy)
    path = tmp_path / "t.jsonl"
    _trace(path, n=80, groups=5, gap_ms=4.0)
    copts = ClusterOptions(replicas=3, routers=(("snap", ()), ("llmd_precise", ()),
                                                ("dynamo", ())),
                           kv_event_lag_ms=7.0 if case == "sync-lag" else 0.0)
    runs = []
    for written in (True, False):
        _Snap.seen = []
        kinds.clear()
        decisions = io.BytesIO()
        res = run_cluster(str(path), OPTS[case], copts, decisions_out=decisions,
                          open_events=_open_events() if written else None)
        for r in res["routers"]:
            r.pop("wall_time_s")
        runs.append((decisions.getvalue(), res, _Snap.seen))
        # lean batches exactly when nothing writes vLLM's events (the CPU tier's stay vLLM's)
        assert ("LeanBatch" in kinds) != written and ("BlockRemoved" in kinds) == (
            written or case == "cpu-tier")
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1]
    assert runs[0][2] == runs[1][2] and any(any(g) for g, _ in runs[0][2])
    if case == "cpu-tier":
        assert any(any(c) for _, c in runs[0][2])
    assert len(orjson.loads(runs[0][0].splitlines()[0])["true_hits"]) == 3
