"""Engine mode under pipeline parallelism = vLLM 0.33's schedulers behind `EngineCore`'s batch
queue of PP batches (PP + 1 under async scheduling), step for step (docs/replay-engine.md,
"Pipeline parallelism").

The answers in tests/data/sched_pp/ come from `oracle_pp.py` there: vLLM's own Scheduler or
AsyncScheduler built with `ParallelConfig(pipeline_parallel_size=N)` (vLLM derives the queue's
depth and the tokens in flight) and driven by `step_with_batch_queue`'s loop. Every non-idle
step line must be ours field for field, with every request's hit, preemptions, first and
finish steps, the prefix-cache stats and, with `kv_events`, vLLM's event batches.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_recorded

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay_pool import concurrent_batches
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "sched_pp"
CASES = sorted(DATA.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", [t for t in CASES if "error" not in answer_of(t)[0]],
                         ids=lambda p: p.name[:-12])
def test_pp_case(trace: Path):
    expected = answer_of(trace)
    got = replay_recorded(trace)
    assert got[0].config["pipeline_parallel_size"] == config_of(trace)["pipeline_parallel_size"]
    assert_matches(expected, got, asyn=True, kv_events=config_of(trace).get("kv_events", False))
    totals = expected[-1]["summary"]["totals"]
    steps = got[1]
    assert sum(e["schedule_called"] for e in steps) == totals["steps"]
    assert sum(e["processed"] is not None for e in steps) == totals["updates"]


def test_a_pool_vllm_refuses_at_that_depth_is_refused():
    """hseed80100: full + two sliding windows at PP 3 (sync): 3 x 128 tokens in flight make
    one request of 512 need 178 blocks; the pool has 130 usable. The message names the queue
    that raised the windows' count."""
    trace = DATA / "hseed80100.trace.jsonl"
    assert "178 blocks" in answer_of(trace)[0]["error"]
    with pytest.raises(InputError, match="178 blocks") as err:
        replay_recorded(trace)
    assert err.value.message.endswith("vLLM refuses to start (pipeline parallelism 3: 3 "
                                      "batches in flight)")


def test_the_queue_is_vllms_max_concurrent_batches():
    def depth(**kw):
        return concurrent_batches(ReplayOptions(**kw))

    assert [depth(), depth(async_scheduling=False)] == [2, 1]
    assert [depth(pipeline_parallel_size=3), depth(pipeline_parallel_size=3,
                                                   async_scheduling=False)] == [4, 3]
    assert depth(pipeline_parallel_size=3, mode="cache") == 1


def test_the_cases_are_all_there():
    names = [t.name.split(".")[0] for t in CASES]
    assert names == ["aseed80108", "b_preemption_pp3_async", "d_priority_pp3_sync",
                     "e_preemption_events_pp2_async", "haseed80111", "hseed80100",
                     "hseed80110", "kaseed80101", "rhaseed80111", "seed14_pp3_async",
                     "seed3_pp2_async", "seed5025_pp3_sync"]
