"""`kvcli replay --model-config tiny-dsv4` (engine mode) against vLLM 0.33's schedulers over
DeepSeek-V4's five KV cache groups (windows at blocks 64 and 64, the compressed caches at 256,
the compressor states at 8 and 4, one pool; scheduler block 256, hash block 4), step for step:
scheduled tokens, admissions and their hits, preemptions, finishes, free blocks, KV events,
prefix-cache stats, and every scheduled request's block ids in every group after each
`schedule()` (tests/data/deepseek_v4/sched/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from oracle_sched import (
    answer_of,
    assert_matches,
    config_of,
    replay_case,
    without_groups,
)

from kvcore.engine.context import ReplayContext
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.replay import engine_loop, run
from kvcore.traces import read_trace

DATA = Path(__file__).resolve().parent / "data" / "deepseek_v4"
MODEL = DATA / "tiny-dsv4.config.json"
CASES = sorted((DATA / "sched").glob("*.trace.jsonl"))
GROUPS = [{"type": "deepseek_v4", "model": "tiny-dsv4"}]


class _Tables:
    """Each scheduled request's block ids a group, after every `schedule()` that scheduled
    tokens (the oracle's `*.blocks.jsonl` rows)."""

    def __init__(self, ctx: ReplayContext) -> None:
        self.kvm = ctx.kvm
        self.rows: list[dict[str, list[list[int]]]] = []

    def scheduled(self, step: int, out: Any) -> None:
        if out.num_scheduled_tokens:
            self.rows.append({rid: [list(ids) for ids in self.kvm.get_block_ids(rid)]
                              for rid in out.num_scheduled_tokens})


def _tables(trace: Path, asyn: bool) -> list[dict[str, list[list[int]]]]:
    """The replay with a watcher after each `schedule()` (no fast-forward or decode windows:
    one call a step, as vLLM's loop makes them; the results do not depend on it)."""
    t = read_trace(str(trace))
    cfg = resolve(ReplayOptions(arrivals="step", async_scheduling=asyn, model_config=str(MODEL)),
                  t.config, path=t.label, config_line=t.config_line)
    ctx = ReplayContext(t, cfg, None)
    loop = engine_loop(ctx)
    loop.fast_forward = loop.decode_windows = False
    loop.sched.windows = None
    loop.watcher = watcher = _Tables(ctx)
    run(ctx, loop)
    return watcher.rows


def test_the_cases() -> None:
    """Sync and async, prefix caching on and off, preemptions, hits."""
    assert len(CASES) == 20
    summaries = [answer_of(t)[-1]["summary"] for t in CASES]
    assert sum(s["totals"]["preemptions"] for s in summaries) > 0
    assert sum(s["prefix_cache_stats"]["hits"] for s in summaries) > 0
    cfgs = [config_of(t) for t in CASES]
    assert {c["async_scheduling"] for c in cfgs} == {c["enable_prefix_caching"] for c in cfgs} \
        == {True, False}


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_steps_are_vllms(trace: Path, tmp_path: Path) -> None:
    cfg = config_of(trace)
    assert cfg["groups"] == GROUPS
    run_ = replay_case(without_groups(trace, tmp_path), async_scheduling=cfg["async_scheduling"],
                       model_config=str(MODEL))
    assert_matches(answer_of(trace), run_, asyn=cfg["async_scheduling"],
                   kv_events=cfg["kv_events"])


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_block_tables_are_vllms(trace: Path, tmp_path: Path) -> None:
    ours = _tables(without_groups(trace, tmp_path), config_of(trace)["async_scheduling"])
    theirs = answer_of(trace, "blocks")
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"schedule() call {i}"
