"""The CPU tier with dense retention (`prefix_cache_retention_interval` null) over windowed KV
cache groups, step for step against vLLM 0.33. kvcli refused it; vLLM keeps a sliding group's
reachable tail before every chunk boundary (`SlidingWindowManager.reachable_block_mask` with
the segment the alignment), so a chunk is stored when its last ``need`` blocks are there, null
blocks before them or not (`hybrid_stores.reachable_mask`).

The 8 recorded cases of `data/offload_dense/` (README there; drawn by
`data/offload_hybrid/make_dense.py`, one beside a Mamba group, answered by the patched oracle)
replayed with `--arrivals step` in the mode their config line names, as `test_offload_hybrid`
compares its cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of

from kvcore.engine.context import ReplayContext
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.replay import engine_loop, run
from kvcore.offload.hybrid_groups import GroupInfo
from kvcore.offload.hybrid_stores import reachable_mask
from kvcore.traces import read_trace

DATA = Path(__file__).parent / "data" / "offload_dense"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: int(t.name[2:].split(".")[0]))


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_dense_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


def test_the_cases_cover_the_layouts_and_both_modes() -> None:
    layouts, modes = set(), set()
    totals = {"cpu_hit_tokens": 0, "cpu_evictions": 0, "lookup_deferrals": 0, "load_jobs": 0}
    for t in CASES:
        cfg = config_of(t)
        assert cfg["prefix_cache_retention_interval"] is None
        layouts.add("".join(g["type"][0] for g in cfg["groups"]))
        modes.add(bool(cfg.get("async_scheduling")))
        off = answer_of(t)[-1]["summary"]["offload"]
        for k in totals:
            totals[k] += off[k]
    assert (len(CASES), layouts, modes) == (
        8, {"s", "fs", "sfs", "ss", "fsc", "cf", "fsm"}, {False, True})
    # (vLLM's summaries of the eight)
    assert totals == {"cpu_hit_tokens": 577, "cpu_evictions": 110, "lookup_deferrals": 10,
                      "load_jobs": 28}


def test_the_dense_mask_is_each_chunks_tail() -> None:
    """Blocks of 2 tokens, chunks of 3 blocks (the alignment): a 5-token window needs 2 blocks
    before a boundary, so dense retention keeps blocks 1-2, 4-5, 7-8; retention 0 keeps only
    the tail before the prompt's boundary (token 13: the 12-token boundary, blocks 4-5), 12
    tokens one tail a 6-block segment. A 7-token window needs 3 blocks, a whole chunk: every
    block (None); a 1-token window needs none: no block."""
    sliding = GroupInfo(3, 5)
    assert reachable_mask(sliding, 0, 9, 2, 6, None, ()) == \
        [False, True, True, False, True, True, False, True, True]
    assert reachable_mask(sliding, 3, 9, 2, 6, None, ()) == \
        [False, True, True, False, True, True]
    assert reachable_mask(sliding, 0, 9, 2, 6, 0, (13,)) == \
        [False, False, False, False, True, True, False, False, False]
    assert reachable_mask(sliding, 0, 9, 2, 6, 12, ()) == \
        [False, False, False, False, True, True, False, False, False]
    assert reachable_mask(GroupInfo(3, 7), 0, 9, 2, 6, None, ()) is None
    assert reachable_mask(GroupInfo(1, 1), 0, 6, 2, 6, None, ()) == [False] * 6
    assert reachable_mask(GroupInfo(2), 0, 6, 2, 6, None, ()) is None     # chunked local


class _Stores:
    """Each step's store jobs: (request, GPU block ids, blocks a group)."""

    def __init__(self, ctx: ReplayContext) -> None:
        self.ctx = ctx
        self.jobs: dict[int, list[tuple[str, list[int], Any]]] = {}

    def scheduled(self, step: int, out: Any) -> None:
        meta = out.kv_meta
        if meta is not None and meta.store_jobs:
            self.jobs[step] = [(j.req_id, list(j.gpu_block_ids), j.group_sizes)
                               for j in meta.store_jobs.values()]


def test_a_chunk_with_a_null_head_and_a_live_tail_is_stored(tmp_path: Path) -> None:
    """A 2-token window over 2-token blocks (a hit needs 1 block), 4-token chunks: `b` shares
    `a`'s 12-token prompt and hits it on the GPU, its sliding table null but for the last hit
    block (GPU block 6) and its own. With a store threshold of 2 `a`'s offer of chunks 0-2
    stored nothing; `b`'s stores chunk 2 (blocks 4-5: null, 6) from block 6 alone, the block a
    hit ending there reads. vLLM answers this trace so (the patched oracle: step 3's store
    offer chunks {0: [2]}, one job of 1 GPU block, group sizes [1]); a rule that wants a
    chunk's every block (the mask of retention None taken as "all") stores nothing."""
    path = tmp_path / "t.jsonl"
    prompt = list(range(1, 13))
    path.write_text("\n".join(json.dumps(x) for x in (
        {"config": {"block_size": 2, "num_blocks": 32, "max_model_len": 32, "max_num_seqs": 2,
                    "max_num_batched_tokens": 16, "async_scheduling": False,
                    "groups": [{"type": "sliding_window", "sliding_window": 2}],
                    "kv_offloading_size_chunks": 8, "offload_block_size": 4,
                    "store_threshold": 2, "prefix_cache_retention_interval": None}},
        {"id": "a", "prompt_token_ids": prompt, "output_length": 1, "arrival_step": 0},
        {"id": "b", "prompt_token_ids": [*prompt, 50, 51], "output_length": 1,
         "arrival_step": 3})) + "\n")
    trace = read_trace(str(path))
    cfg = resolve(ReplayOptions(arrivals="step"), trace.config, path=trace.label,
                  config_line=trace.config_line)
    ctx = ReplayContext(trace, cfg, None)
    loop = engine_loop(ctx)
    loop.watcher = stores = _Stores(ctx)
    run(ctx, loop)
    assert stores.jobs == {3: [("b", [6], [1])]}
    off = ctx.summary.offload
    assert (off["store_offers"], off["chunks_stored"], off["gpu_blocks_stored"]) == (2, 1, 1)
