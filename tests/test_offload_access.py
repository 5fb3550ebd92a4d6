"""The manager's two ways of knowing what a request observed (`kvcore/offload/access.py`): by
key (a context with positions, any caller) and by chunk index (a context with chunk keys, the
connector's) must leave the manager in the same state after any sequence of offers, stores,
loads and finishes: the same offers, slots, victims, LRU ranks, ARC lists and events. The
index path is a speed trick (no set, no positions dict per chunk); this is its equality test
against the plain path, beside the oracle's replays that run it."""

from __future__ import annotations

import random

import pytest

from kvcore.offload.keys import ReqContext, make_key
from kvcore.offload.manager import CPUOffloadingManager
from kvcore.offload.manager_reports import drain_events
from kvcore.offload.op_script import key_out

TPC = 16


def _prefixes(rng: random.Random) -> list[list[bytes]]:
    """Requests' chunk keys: chains that share heads (as prompts with a common prefix do)."""
    out: list[list[bytes]] = []
    for r in range(rng.randrange(3, 7)):
        if out and rng.random() < 0.6:
            base = rng.choice(out)
            head = base[:rng.randrange(len(base) + 1)]
        else:
            head = []
        tail = [make_key(rng.randbytes(32)) for _ in range(rng.randrange(1, 9))]
        out.append(head + tail)
    return out


def _state(m: CPUOffloadingManager) -> object:
    return (m.policy.state(key_out), [c.chunk_id for c in m.free_list], m.num_evictable,
            m.num_write_pending, [(e.keys, e.removed) for e in drain_events(m)])


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_by_index_equals_by_key(seed: int, policy: str) -> None:
    rng = random.Random(seed)
    chains = _prefixes(rng)
    cap = rng.choice([3, 5, 8, 13])
    by_key = CPUOffloadingManager(cap, policy, enable_events=True, one_group=True)
    by_index = CPUOffloadingManager(cap, policy, enable_events=True, one_group=True)
    ctx_key = [ReqContext(f"r{i}") for i in range(len(chains))]
    ctx_index = [ReqContext(f"r{i}", chain, TPC) for i, chain in enumerate(chains)]
    for i, chain in enumerate(chains):
        for j, k in enumerate(chain):
            ctx_key[i].set_position(k, (j + 1) * TPC)
        by_key.on_new_request(ctx_key[i])
        by_index.on_new_request(ctx_index[i])
    stores: list[list[bytes]] = []
    loads: list[list[bytes]] = []
    done: set[int] = set()
    for _ in range(60):
        op = rng.random()
        live = [i for i in range(len(chains)) if i not in done]
        if op < 0.45 and live:                      # an offer of a slice of a request's chain
            i = rng.choice(live)
            a = rng.randrange(len(chains[i]))
            b = rng.randrange(a, len(chains[i])) + 1
            keys = chains[i][a:b]
            o1 = by_key.prepare_store(keys, ctx_key[i])
            o2 = by_index.prepare_store(keys, ctx_index[i], a)
            assert (o1 is None) == (o2 is None)
            if o1 is not None and o2 is not None:
                assert (o1.keys_to_store, o1.chunks, o1.evicted) == \
                    (o2.keys_to_store, o2.chunks, o2.evicted)
                if o1.keys_to_store:
                    stores.append(o1.keys_to_store)
        elif op < 0.65 and stores:                  # a store completes
            keys = stores.pop(rng.randrange(len(stores)))
            assert by_key.complete_store(keys) == by_index.complete_store(keys)
        elif op < 0.8 and live:                     # a load of a readable run of chunks
            i = rng.choice(live)
            a = rng.randrange(len(chains[i]))
            b = a
            while b < len(chains[i]) and (c := by_key.policy.get(chains[i][b])) is not None \
                    and c.ref_cnt >= 0:
                b += 1
            keys = chains[i][a:b]
            assert by_key.prepare_load(keys, ctx_key[i]) == \
                by_index.prepare_load(keys, ctx_index[i], a)
            if keys:
                loads.append(keys)
        elif op < 0.9 and loads:                    # a load completes
            keys = loads.pop(rng.randrange(len(loads)))
            by_key.complete_load(keys)
            by_index.complete_load(keys)
        elif live:                                  # a request finishes
            i = rng.choice(live)
            done.add(i)
            by_key.on_request_finished(ctx_key[i])
            by_index.on_request_finished(ctx_index[i])
        assert _state(by_key) == _state(by_index)
