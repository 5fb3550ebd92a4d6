"""Hybrid KV cache groups at the scheduler level = vLLM 0.33.0's Scheduler over a hybrid
`KVCacheConfig` with CacheConfig's default `prefix_cache_retention_interval` 0.

The six cases of the shared sched-cases-hybrid (copied to tests/data/sched_cases_hybrid/, see
data/README.md) and eight fresh random ones (tests/data/sched_fresh_hybrid/) carry `"groups"` in their config line (full + sliding window, full + chunked
local, sliding window only, preemption, two sliding groups with KV events, and one async case).
Replayed with `--arrivals step` and the scheduling mode the case was recorded in, every step
line, every request's hit / preemptions / first and last step, the prefix-cache stats and the
vLLM event batches (group by group: a sliding group's sparse `BlockStored` lists, the empty ones
for decode-completed blocks) must be the oracle's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import answer_of, assert_matches, config_of, replay_case

from kvcore.engine.replay import ReplayOptions, replay
from kvcore.errors import InputError

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_cases_hybrid").glob("*.trace.jsonl"))
# the same traces answered by `oracle sched --async` (d: refused by both, see below)
UNDER_ASYNC = [t for t in CASES if t.with_name(t.name.replace(".trace.", ".async.expected.")
                                               ).exists()]
# random hybrid cases, sync (hseedN) and async (haseedN): make_cases.py --hybrid [--async];
# 28 of 28 matched when recorded, 30 of 30 more on 2026-12-03 (hseed5213 kept); pahseed44021:
# make_spaces.py, the campaign of 2026-12-05 (tests/data/sched_fresh/README.md)
# hseed70049: the fidelity campaign of 2026-12-05 after the lookup memo (7 preemptions)
FRESH = sorted((DATA / "sched_fresh_hybrid").glob("*.trace.jsonl"))


def run_case(trace: Path, **options):
    """The case in the mode the oracle read from its config line (absent: sync)."""
    options.setdefault("async_scheduling", config_of(trace).get("async_scheduling", False))
    return replay_case(trace, **options)


@pytest.mark.parametrize("trace", CASES + FRESH, ids=lambda p: p.name[:-12])
def test_hybrid_case(trace: Path):
    cfg = config_of(trace)
    run = run_case(trace)
    assert run[0].config["prefix_cache_retention_interval"] == 0
    assert_matches(answer_of(trace), run, asyn=cfg.get("async_scheduling", False),
                   kv_events=cfg.get("kv_events", False))


@pytest.mark.parametrize("trace", UNDER_ASYNC, ids=lambda p: p.name[:-12])
def test_hybrid_case_with_kvcli_default_async(trace: Path):
    """No scheduling flag (kvcli's default, async) = `oracle sched --async` on the same trace."""
    run = replay_case(trace)
    assert run[0].config["async_scheduling"] is True
    assert run[0].config["prefix_cache_retention_interval"] == 0
    assert_matches(answer_of(trace, "async.expected"), run, asyn=True,
                   kv_events=config_of(trace).get("kv_events", False))


def test_the_cases_are_all_there():
    assert [t.name.split("_")[0] for t in CASES] == list("abcdef")
    assert [t.name.split("_")[0] for t in UNDER_ASYNC] == list("abce")
    assert [t.name.split(".")[0] for t in FRESH] == [
        "haseed214", "haseed224", "haseed225", "haseed227", "hseed204", "hseed209", "hseed211",
        "hseed5213", "hseed70049", "hseed7156", "pahseed44021"]


def test_dense_retention_caches_what_vllm_default_does_not():
    """a_full_swa_skip: a1 gets no hit at retention 0 (the sliding group kept only the blocks
    around a0's last token), 64 tokens with dense retention (every full block cached)."""
    a = CASES[0]
    hits = {r: {i: v["hit_tokens"] for i, v in run_case(a, prefix_cache_retention_interval=r)[2]
                .items()} for r in (0, None)}
    assert hits[0]["a1"] == 0 and hits[None]["a1"] == 64
    assert all(hits[0][f"a{i}"] == hits[None][f"a{i}"] == 64 for i in range(2, 8))


def test_the_async_hybrid_case_differs_from_sync_as_recorded():
    """f_async_hybrid: two batches in flight double the sliding group's admission reserve
    (11 blocks against 7): f5 is admitted at step 17 (sync: 15), f7 finds its prefix evicted
    (hit 0, sync 64); 57 steps against 52, 448 hit tokens against 512."""
    f = CASES[-1]
    got = {}
    for asyn in (True, False):
        s, _, reqs, _ = run_case(f, async_scheduling=asyn)
        got[asyn] = (s.steps, s.hit_tokens, reqs["f5"]["first_scheduled_step"],
                     reqs["f7"]["hit_tokens"])
    assert got == {True: (57, 448, 17, 0), False: (52, 512, 15, 64)}


def test_vllm_refuses_to_start_when_one_max_model_len_request_cannot_fit(tmp_path):
    d = CASES[3]                                    # d_hybrid_preemption: 44 blocks, 37 needed
    lines = d.read_text().splitlines()
    cfg = json.loads(lines[0])
    cfg["config"]["num_blocks"] = 37
    trace = tmp_path / "d.trace.jsonl"
    trace.write_text("\n".join([json.dumps(cfg), *lines[1:]]) + "\n")
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=False))
    assert (e.value.field, e.value.line) == ("config.num_blocks", 1)
    assert e.value.message == (
        "one request of max_model_len 384 tokens needs 37 blocks (24 full_attention + 13 "
        "sliding_window) but only 36 are usable (num_blocks 37): vLLM refuses to start")
    # Under async two batches are in flight: the sliding group reserves 21 blocks, not 13.
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions(arrivals="step", num_blocks=44))
    assert e.value.field == "num_blocks" and e.value.message.startswith(
        "one request of max_model_len 384 tokens needs 45 blocks (24 full_attention + 21 "
        "sliding_window) but only 43 are usable (num_blocks 44)")
    replay(str(trace), ReplayOptions(arrivals="step", num_blocks=46))     # fits: runs


@pytest.mark.parametrize("model", ["gemma-3-27b", "gpt-oss-20b"])
def test_sliding_window_models_replay_to_the_end_and_say_how(tmp_path, model):
    """The conversation trace's first 300 requests on a model with sliding layers: every one
    finishes; the summary says async scheduling and vLLM's retention 0 (the table too)."""
    import gzip

    from typer.testing import CliRunner

    from kvcli.app import app

    src = Path(__file__).parent / "data" / "traces" / "mooncake" / "conversation_trace.jsonl.gz"
    head = tmp_path / "head.jsonl"
    with gzip.open(src, "rt") as f:
        head.write_text("".join(line for _, line in zip(range(300), f)))
    res = CliRunner().invoke(app, ["replay", str(head), "--model", model,
                                   "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["finished"] == d["requests"] == 300 and d["rejected"] == 0
    assert (d["config"]["async_scheduling"], d["config"]["prefix_cache_retention_interval"]) \
        == (True, 0)
    table = CliRunner().invoke(app, ["replay", str(head), "--model", model, "--gpu-memory-gib",
                                     "80", "--mode", "engine"]).stdout
    assert "async (batch queue of 2)" in table
    assert "0 (sliding windows keep reachable tails only)" in table


def test_the_summarys_groups_paste_back_into_a_config_line(tmp_path):
    # the summary names a group by vLLM's kind ('full_attention'), which a config line refused
    trace = tmp_path / "t.jsonl"
    req = {"id": "a", "prompt_token_ids": list(range(40)), "output_length": 3}
    trace.write_text(json.dumps({"config": {"groups": [{"type": "full"}, {
        "type": "sliding_window", "sliding_window": 16}]}}) + "\n" + json.dumps(req) + "\n")
    groups = replay(str(trace), ReplayOptions()).groups
    assert [g["type"] for g in groups] == ["full_attention", "sliding_window"]
    trace.write_text(json.dumps({"config": {"groups": groups}}) + "\n" + json.dumps(req) + "\n")
    assert replay(str(trace), ReplayOptions()).groups == groups


@pytest.mark.parametrize("config, field, says", [
    ({"groups": "x"}, "config.groups", "must be a non-empty list of groups"),
    ({"groups": [{"type": "weird"}]}, "config.groups", "unknown group type 'weird'"),
    ({"groups": [{"type": "sliding_window"}]}, "config.groups", "missing"),
    # (a group runs at its own block size: tests/data/sched_spec_eagle_mixed/)
    ({"groups": [{"type": "sliding_window", "sliding_window": 64, "block_size": 0},
                 {"type": "full_attention", "block_size": 16}]}, "config.groups",
     "a sliding_window group's block_size must be a positive integer, got 0"),
    ({"prefix_cache_retention_interval": "abc"}, "config.prefix_cache_retention_interval",
     "must be dense (null) or an integer >= 0, got 'abc'"),
    ({"groups": [{"type": "full"}, {"type": "sliding_window", "sliding_window": 32}],
      "prefix_cache_retention_interval": 17}, "config.prefix_cache_retention_interval",
     "must be >= 0 and a multiple of the scheduler block size 16"),
    ({"prefix_cache_retention_interval": 16}, "config.prefix_cache_retention_interval",
     "has no effect: no sliding-window or Mamba KV cache group"),
    ({"async_scheduling": "yes"}, "config.async_scheduling", "must be true or false, got 'yes'"),
    ({"enable_prefix_caching": 1}, "config.enable_prefix_caching", "must be true or false"),
])
def test_bad_config_lines_name_the_key(tmp_path, config, field, says):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": config}) + "\n"
                     + json.dumps({"id": "a", "prompt_token_ids": [1, 2, 3, 4, 5],
                                   "output_length": 3}) + "\n")
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions())
    assert (e.value.path, e.value.line, e.value.field) == (str(trace), 1, field)
    assert says in e.value.message
