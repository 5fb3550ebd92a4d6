"""The pool's batch eviction report (`on_evict_many`) says exactly what `on_evict` would."""

from __future__ import annotations

import random

import pytest
from kvtest_helpers import make_manager, make_request

from kvcore.tracing import RecordingTracer


class BatchTracer(RecordingTracer):
    """Records `on_evict_many` as the per-block records `on_evict` gives, and counts calls."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def on_evict_many(self, groups, block_ids, hashes):
        self.batches += 1
        for g, b, h in zip(groups, block_ids, hashes):
            self.on_evict(g, b, h)


def workload(tracer, groups):
    mgr = make_manager(24, groups=groups, bs=4, tracer=tracer)
    rng = random.Random(3)
    live = []
    for i in range(150):
        # shared prefixes (hits, several blocks under one hash) and fresh content (evictions)
        toks = [rng.randint(0, 2) for _ in range(rng.randint(1, 3) * 4)]
        toks += [rng.randint(0, 99) for _ in range(rng.randint(1, 10))]
        req = make_request(f"r{i}", toks, bs=4)
        tracer.req = req.request_id
        blocks, hit = mgr.get_computed_blocks(req)[:2]
        if mgr.allocate_slots(req, req.num_tokens - hit, hit, blocks) is not None:
            live.append(req)
        while live and (len(live) > 2 or rng.random() < 0.5):
            done = live.pop(rng.randrange(len(live)))
            tracer.req = done.request_id
            mgr.free(done)
    return tracer


@pytest.mark.parametrize("groups", [("full",), ("full", "full")])
def test_batch_evictions_equal_per_block_ones(groups):
    one = workload(RecordingTracer(), groups)
    many = workload(BatchTracer(), groups)
    assert many.records == one.records
    assert sum(r[0] == "evict" for r in one.records) > 20
    assert 0 < many.batches < sum(r[0] == "evict" for r in one.records)
