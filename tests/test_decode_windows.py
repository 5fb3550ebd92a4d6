"""Decode windows (`kvcore.engine.decode_windows`) are exact: a synchronous replay writes the same
bytes with them and without them (step lines, request lines, our event stream, vLLM's event
batches, the summary but its wall time), with the fast-forward on or off, and they do cover most
decode steps (fewer `allocate_slots` calls)."""

from __future__ import annotations

import random

import pytest
from replay_bytes import SAMPLE, head, random_token_trace, replay_bytes

from kvcore.engine.engine_loop import EngineLoop
from kvcore.engine.replay import ReplayOptions
from kvcore.kv_cache_manager import KVCacheManager

# They patch the stack's classes (or record their calls): the pure-Python modules only.
pytestmark = pytest.mark.pure_python


def outputs(trace: str, opts: ReplayOptions, events: str, windows: bool, monkeypatch,
            fast_forward: bool = True) -> tuple[tuple, int]:
    """Every output of one replay, and how many `allocate_slots` calls it made."""
    return replay_bytes(trace, opts, events, monkeypatch,
                        counting=(KVCacheManager, "allocate_slots"),
                        fast_forward=fast_forward, decode_windows=windows)


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("events", ["jsonl", "vllm"])
@pytest.mark.parametrize("case", ["sample-timestamps", "sample-small-pool", "conversation-step",
                                  "sample-max-model-len", "sample-small-budget",
                                  "sample-no-prefix-cache"])
def test_decode_windows_change_no_byte(tmp_path, monkeypatch, case, events, asyn):
    base = {"async_scheduling": asyn, "block_size": 16}
    trace, extra = {
        "sample-timestamps": (str(SAMPLE), {"num_blocks": 4096}),
        "sample-small-pool": (str(SAMPLE), {"num_blocks": 1200}),      # preemptions
        "conversation-step": (head(tmp_path, 200), {"num_blocks": 30000, "arrivals": "ignore",
                                                    "max_num_seqs": 64}),
        "sample-max-model-len": (str(SAMPLE), {"num_blocks": 4096, "max_model_len": 4100,
                                               "skip_bad": True}),
        # the budget runs out inside the running list: later windows stop there
        "sample-small-budget": (str(SAMPLE), {"num_blocks": 4096,
                                              "max_num_batched_tokens": 40}),
        "sample-no-prefix-cache": (str(SAMPLE), {"num_blocks": 2000,
                                                 "enable_prefix_caching": False}),
    }[case]
    opts = ReplayOptions(**base, **extra)
    on, calls_on = outputs(trace, opts, events, True, monkeypatch)
    off, calls_off = outputs(trace, opts, events, False, monkeypatch)
    assert on[3] == off[3]
    assert on[0] == off[0] and on[1] == off[1] and on[2] == off[2]
    # the windows ran (the fast-forward, on here, already skips the quiet stretches' calls)
    assert calls_on < 0.9 * calls_off, (calls_on, calls_off)


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
def test_decode_windows_without_the_fast_forward(monkeypatch, asyn):
    """Windows alone (every step a plain step) change nothing either, and skip most calls."""
    opts = ReplayOptions(async_scheduling=asyn, block_size=16, num_blocks=1500)
    on, calls_on = outputs(str(SAMPLE), opts, "jsonl", True, monkeypatch, fast_forward=False)
    off, calls_off = outputs(str(SAMPLE), opts, "jsonl", False, monkeypatch, fast_forward=False)
    assert on == off
    assert calls_on < 0.3 * calls_off, (calls_on, calls_off)


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
def test_decode_windows_stay_closed_under_priority(monkeypatch, asyn):
    """The PRIORITY policy runs every decode step in full."""
    o = ReplayOptions(block_size=16, num_blocks=4096, policy="priority", async_scheduling=asyn)
    on, calls_on = outputs(str(SAMPLE), o, "jsonl", True, monkeypatch)
    off, calls_off = outputs(str(SAMPLE), o, "jsonl", False, monkeypatch)
    assert on == off and calls_on == calls_off


def test_decode_windows_on_random_token_traces(tmp_path, monkeypatch):
    """Random token-id traces with shared prefixes, staggered steps, small pools and budgets,
    odd block sizes, model-length caps: the same bytes both ways."""
    for seed in range(8):
        rng = random.Random(100 + seed)
        bs = rng.choice([1, 2, 3, 8, 16])
        cfg = {"block_size": bs, "num_blocks": rng.choice([40, 120, 2000]),
               "max_num_seqs": rng.choice([2, 8, 32]),
               "max_num_batched_tokens": rng.choice([8, 24, 64, 512]),
               "max_model_len": rng.choice([None, 70, 120])}
        cfg = {k: v for k, v in cfg.items() if v is not None}
        # vLLM refuses a budget below max_num_seqs at start-up (kvcore.engine.sched_limits)
        cfg["max_num_seqs"] = min(cfg["max_num_seqs"], cfg["max_num_batched_tokens"])
        trace = random_token_trace(tmp_path / f"t{seed}.jsonl", rng, cfg)
        for asyn, ff in ((False, True), (False, False), (True, False)):
            opts = ReplayOptions(async_scheduling=asyn, arrivals="step", skip_bad=True)
            on, _ = outputs(trace, opts, "jsonl", True, monkeypatch, fast_forward=ff)
            off, _ = outputs(trace, opts, "jsonl", False, monkeypatch, fast_forward=ff)
            assert on == off, (seed, asyn, ff)


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
def test_a_budget_that_runs_out_before_a_window_stops_it_there(monkeypatch, asyn):
    """A step whose budget runs out before requests inside their windows (here the budget drops
    to 3 tokens for steps 40-59) does not schedule them: their windows stop at the step before,
    and the bytes stay those of the plain steps."""
    from kvcore.engine.async_loop import AsyncEngineLoop

    loop_cls = AsyncEngineLoop if asyn else EngineLoop
    real_step = loop_cls.step

    def step(self):
        cfg = self.sched.config
        cfg.max_num_batched_tokens = 3 if 40 <= self.ctx.step < 60 else 2048
        real_step(self)

    monkeypatch.setattr(loop_cls, "step", step)
    opts = ReplayOptions(async_scheduling=asyn, block_size=16, num_blocks=4096,
                         arrivals="ignore")
    stopped = []
    from kvcore.engine import decode_windows

    real_catch_up = decode_windows.DecodeWindows.catch_up

    def catch_up(self, req, now, last):
        stopped.append(req.decode_window_end >= now)
        real_catch_up(self, req, now, last)

    monkeypatch.setattr(decode_windows.DecodeWindows, "catch_up", catch_up)
    on, _ = outputs(str(SAMPLE), opts, "jsonl", True, monkeypatch, fast_forward=False)
    assert any(stopped)                 # windows were cut short
    off, _ = outputs(str(SAMPLE), opts, "jsonl", False, monkeypatch, fast_forward=False)
    assert on == off


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("events", ["jsonl", "vllm"])
@pytest.mark.parametrize("tier", [
    {"kv_offloading_size": 2.0},
    {"kv_offloading_size": 1.0, "offload_prompt_only": False},
    {"kv_offloading_size": 2.0, "offload_block_size": 64, "eviction_policy": "arc"},
], ids=["lru", "decode-kv-stored", "arc-chunks-of-4"])
def test_decode_windows_with_the_cpu_tier(monkeypatch, events, tier, asyn):
    """The CPU tier keeps the windows, sync and async (vLLM's deferred frees with it): the same
    bytes without them (the tier's events and step keys included)."""
    opts = ReplayOptions(async_scheduling=asyn, block_size=16, num_blocks=1500, **tier,
                         given=frozenset(tier))
    on, calls_on = outputs(str(SAMPLE), opts, events, True, monkeypatch)
    off, calls_off = outputs(str(SAMPLE), opts, events, False, monkeypatch)
    assert on == off
    assert calls_on < 0.9 * calls_off, (calls_on, calls_off)
