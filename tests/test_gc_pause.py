"""A replay makes no garbage cycles while it runs, so pausing the collector (`kvcore.gc_pause`)
costs no memory that grows with the trace: every object a step frees is freed by reference
counting. Checked by collecting after a stretch of steps (the replay's own long-lived cycles
are still reachable then, so anything the collector finds was made and dropped by the steps)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from kvcore.engine.context import ReplayContext
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.replay import engine_loop, replay
from kvcore.engine.vllm_events import VllmEvents
from kvcore.gc_pause import gc_paused
from kvcore.traces import read_trace

SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl"

CASES = {
    "sync": {"async_scheduling": False},
    "async": {"async_scheduling": True},
    "small pool (preemptions)": {"async_scheduling": False, "num_blocks": 400, "skip_bad": True},
    "cpu tier": {"kv_offloading_size": 0.05, "num_layers": 2, "num_kv_heads": 2, "head_size": 64},
    "hybrid": {"model": "gemma-3-27b", "gpu_memory_gib": 80},
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("events", ["ours", "vllm"])
def test_steps_leave_no_cyclic_garbage(name: str, events: str, tmp_path: Path) -> None:
    opts = {"block_size": 16, "num_blocks": 2048}
    opts.update(CASES[name])
    tr = read_trace(str(SAMPLE))
    with (tmp_path / "ev.jsonl").open("wb") as f:
        sink = JsonlEvents(f) if events == "ours" else VllmEvents(f)
        ctx = ReplayContext(tr, resolve(ReplayOptions(**opts), tr.config), sink)
        loop = engine_loop(ctx)
        with gc_paused():
            for _ in range(200):       # warm up: memos and queues reach their working size
                assert loop.advance()
            gc.collect()
            turns = 0
            while turns < 2000 and loop.advance():
                turns += 1
            assert turns > 300
            assert gc.collect() == 0


def test_replay_pauses_the_collector_and_restores_it() -> None:
    seen = []

    def progress(_n: int) -> None:
        seen.append(gc.isenabled())

    assert gc.isenabled()
    replay(str(SAMPLE), ReplayOptions(block_size=16, num_blocks=2048), progress=progress)
    assert seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        replay(str(SAMPLE), ReplayOptions(block_size=16, num_blocks=2048))
        assert not gc.isenabled()    # a caller's own choice is kept
    finally:
        gc.enable()
