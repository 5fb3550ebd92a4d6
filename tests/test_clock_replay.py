"""The roofline clock in the replay: exact with decode windows and the fast-forward on or off
(they price their steps from an aggregate of contexts, not per request), different per GPU,
and the hit rate moved only through concurrency."""

from __future__ import annotations

import pytest
from replay_bytes import SAMPLE, replay_bytes

from kvcore.engine.replay import ReplayOptions
from kvcore.kv_cache_manager import KVCacheManager

pytestmark = pytest.mark.pure_python


def _run(opts, monkeypatch, windows, ff):
    return replay_bytes(str(SAMPLE), opts, "jsonl", monkeypatch,
                        counting=(KVCacheManager, "allocate_slots"), fast_forward=ff,
                        decode_windows=windows)


@pytest.mark.parametrize("asyn", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("extra", [{"num_blocks": 4096}, {"num_blocks": 1200},
                                   {"num_blocks": 4096, "max_num_batched_tokens": 40}],
                         ids=["plain", "preemptions", "small-budget"])
def test_roofline_times_equal_with_windows_and_fast_forward_on_or_off(monkeypatch, asyn, extra):
    opts = ReplayOptions(model="llama-3.1-8b", gpu="h100-sxm", block_size=16,
                         async_scheduling=asyn, **extra)
    both, calls_both = _run(opts, monkeypatch, True, True)
    plain, calls_plain = _run(opts, monkeypatch, False, False)
    assert both == plain
    assert calls_both < 0.9 * calls_plain          # the speed-ups did run
    assert _run(opts, monkeypatch, True, False)[0] == plain
    if not asyn:                                    # (the fast-forward is synchronous only)
        assert _run(opts, monkeypatch, False, True)[0] == plain
    assert plain[3]["clock"]["name"] == "roofline"


def test_gpus_give_different_times_same_hit_rate_without_contention(monkeypatch):
    out = {}
    for gpu in ("h100-sxm", "a100-80gb"):
        opts = ReplayOptions(model="llama-3.1-8b", gpu=gpu, num_blocks=16384)
        out[gpu] = _run(opts, monkeypatch, True, True)[0][3]
    h, a = out["h100-sxm"], out["a100-80gb"]
    assert h["clock"]["gpu"]["name"] == "h100-sxm" and a["clock"]["gpu"]["hbm_tbps"] == 2.039
    assert h["steps"] != a["steps"]
    # the H100 waits less (its steps are shorter); the trace's arrival span bounds both
    assert h["queue_delay_p50_s"] < a["queue_delay_p50_s"]
    assert h["hit_rate"] == a["hit_rate"]           # a big pool: no eviction either way
    assert h["config"]["gpu"] == "h100-sxm" and h["config"]["tp"] == 1
