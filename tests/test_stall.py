"""A waiting head the engine can never admit (`kvcore.engine.stall`): refused at once when every
later step must repeat the refusal, skipped with --skip-bad at the step that proves it, and not
refused while an arrival could still change it (the priority policy, a long-prefill threshold)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_options import refused, runner

from kvcli.app import app

# A full-attention group beside a 32-token window in a pool of 12 blocks (11 usable): 'b' (100
# tokens) passes the check in advance (at its last token 7 full blocks and 3 in its window) but
# its one prefill chunk needs 7 + 7.
GROUPS = [{"type": "full"}, {"type": "sliding_window", "sliding_window": 32}]


def _req(rid: str, tokens: list[int], **kw) -> dict:
    return {"id": rid, "prompt_token_ids": tokens, "output_length": 3, **kw}


def _trace(tmp_path: Path, config: dict, *reqs: dict) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in ({"config": config}, *reqs)))
    return path


def _replay(path: Path, *args: str) -> tuple[dict, list[dict], list[dict]]:
    """The summary, the events (arrive / admit / preempt / finish / reject) and the step lines."""
    events, steps = path.with_suffix(".events"), path.with_suffix(".steps")
    res = runner.invoke(app, ["replay", str(path), "--json", "--events", str(events),
                              "--steps", str(steps), *args])
    assert res.exit_code == 0, res.output
    kinds = {"arrive", "admit", "preempt", "finish", "reject"}
    evs = [e for e in map(json.loads, events.read_text().splitlines()[1:]) if e["kind"] in kinds]
    return (json.loads(res.stdout), [{k: e[k] for k in ("step", "kind", "req")} for e in evs],
            [json.loads(x) for x in steps.read_text().splitlines()])


@pytest.mark.parametrize(("schedule", "at"), [("--no-async-scheduling", 3),
                                              ("--async-scheduling", 4)])
def test_skip_bad_rejects_the_head_at_the_step_that_proves_it(tmp_path, schedule, at):
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12},
                  _req("a", list(range(1, 50))), _req("b", list(range(200, 300))),
                  _req("c", list(range(1, 30))))
    doc, evs, steps = _replay(path, "--skip-bad", schedule)
    assert (doc["requests"], doc["finished"], doc["rejected"]) == (3, 2, 1)
    # 'a' finishes (its blocks freed at `at - 1`); the next schedule() refuses 'b' with all 11
    # blocks free and nothing running: rejected there, and 'c' admitted the step after
    assert [(e["step"], e["kind"], e["req"]) for e in evs if e["req"] != "a"] == [
        (0, "arrive", "b"), (0, "arrive", "c"), (at, "reject", "b"), (at + 1, "admit", "c"),
        (at + 3 + (at == 4), "finish", "c")]
    assert [s["step"] for s in steps if s["scheduled"]][:4] == [0, 1, 2, at + 1]
    assert len(steps) < 15          # (the old guard idled 1,000 steps, then stopped the run)


def test_an_arrival_under_a_long_prefill_threshold_can_still_admit_the_head(tmp_path):
    """'b' alone gets its whole prompt as one chunk, which the empty pool refuses; once 'c'
    waits too, the threshold cuts it to 16 tokens and it runs: no refusal while 'c' is to come."""
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12,
                             "long_prefill_token_threshold": 16,
                             "scheduler_reserve_full_isl": False},
                  _req("b", list(range(200, 300)), arrival_step=0),
                  _req("c", list(range(1, 30)), arrival_step=20))
    doc, evs, _ = _replay(path, "--skip-bad", "--arrivals", "step")
    assert (doc["finished"], doc["rejected"]) == (2, 0)
    assert evs[:4] == [{"step": 0, "kind": "arrive", "req": "b"},
                       {"step": 20, "kind": "arrive", "req": "c"},
                       {"step": 20, "kind": "admit", "req": "b"},
                       {"step": 20, "kind": "admit", "req": "c"}]


def test_a_priority_arrival_can_cache_the_heads_prefix_and_let_it_in(tmp_path):
    """Under the priority policy 'c' overtakes the refused 'b', runs, and leaves 80 of b's
    tokens cached: 'b' then fits. No refusal while 'c' is to come."""
    b = list(range(200, 300))
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12, "policy": "priority"},
                  _req("b", b, arrival_step=0, priority=5),
                  _req("c", b[:80], arrival_step=20, priority=0))
    doc, evs, _ = _replay(path, "--skip-bad", "--arrivals", "step")
    assert (doc["finished"], doc["rejected"]) == (2, 0)
    admits = [(e["step"], e["req"]) for e in evs if e["kind"] == "admit"]
    assert admits[0] == (20, "c") and admits[-1] == (25, "b")


def test_the_guard_is_certain_once_nothing_is_left_to_arrive(tmp_path):
    """The same refusal with 'c' too short to help: once 'c' has arrived and run (nothing left
    to arrive), the refusal is certain and 'b' is rejected, at the step after c's last."""
    b = list(range(200, 300))
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12, "policy": "priority"},
                  _req("b", b, arrival_step=0, priority=5),
                  _req("c", b[:48], arrival_step=20, priority=0))
    refused(["replay", str(path), "--arrivals", "step"], f"error: {path}:2: field 'num_blocks': "
            "request 'b' can never be admitted: refused with nothing running and all 11 usable "
            "blocks free (num_blocks 12): vLLM would wait forever; give more num_blocks "
            "(--skip-bad skips such requests)")
    doc, evs, _ = _replay(path, "--skip-bad", "--arrivals", "step")
    assert (doc["finished"], doc["rejected"]) == (1, 1)
    finish_c = next(e["step"] for e in evs if e["kind"] == "finish")
    assert evs[-1] == {"step": finish_c + 1, "kind": "reject", "req": "b"}


def test_a_mamba_hybrid_skips_what_its_empty_pool_refuses(tmp_path):
    """nemotron-nano-9b-v2: 7 Mamba groups and a full-attention one of 1,312-token blocks."""
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (
        _req("a", list(range(1, 50))), _req("b", list(range(1, 3000))),
        _req("c", list(range(1, 30))))))
    model = ["--model", "nemotron-nano-9b-v2"]
    res = runner.invoke(app, ["replay", str(path), *model, "--num-blocks", "4"])
    # (after the warning that vllm serve would not start with such a pool)
    assert res.exit_code == 2 and res.stderr.splitlines()[-1] == (
        f"error: {path}:1: field 'num_blocks': request 'a' can never be admitted: refused with "
        "nothing running and all 3 usable blocks free (num_blocks 4): vLLM would wait forever; "
        "give more num_blocks (--skip-bad skips such requests)")
    doc, evs, _ = _replay(path, *model, "--num-blocks", "12", "--skip-bad")
    assert (doc["finished"], doc["rejected"]) == (2, 1)
    assert [e["req"] for e in evs if e["kind"] == "reject"] == ["b"]
    doc, _, _ = _replay(path, *model, "--num-blocks", "25")
    assert (doc["finished"], doc["rejected"]) == (3, 0)


@pytest.mark.parametrize(("schedule", "steps"), [("--no-async-scheduling", 1005),
                                                 ("--async-scheduling", 1006)])
def test_a_head_waiting_for_a_far_arrival_waits_without_stepping(tmp_path, schedule, steps):
    """Under the priority policy 'c', 1,000 s away, could still lift the refused 'b': the
    engine steps 1,000 idle steps as vLLM would, then waits for 'c' at once (it stepped each
    5 ms: 200,000 steps here, millions for a gap of hours), and rejects 'b' once 'c' is done."""
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12},
                  _req("b", list(range(200, 300)), timestamp=0, priority=5),
                  _req("c", list(range(1, 30)), timestamp=1e6, priority=0))
    doc, evs, _ = _replay(path, "--policy", "priority", "--skip-bad", schedule)
    assert (doc["steps"], doc["finished"], doc["rejected"]) == (steps, 1, 1)
    assert [(e["step"], e["kind"], e["req"]) for e in evs] == [
        (0, "arrive", "b"), (1001, "arrive", "c"), (1001, "admit", "c"),
        (steps - 2, "finish", "c"), (steps - 1, "reject", "b")]


def test_a_request_whose_window_outgrows_the_pool_is_refused_in_advance(tmp_path):
    """'a' (16 tokens, 120 out) holds 9 full blocks and 3 in its window at its last token: more
    than 9. It ran, preempted itself and stopped the run as 'can never be admitted'."""
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 10},
                  {"id": "a", "prompt_token_ids": list(range(1, 17)), "output_length": 120},
                  _req("c", list(range(1, 30))))
    refused(["replay", str(path)], f"error: {path}:2: field 'num_blocks': request 'a' can never "
            "run: needs 12 blocks of 16 tokens at its last token (its attention layers alone) but "
            "only 9 are usable (num_blocks 10) (--skip-bad skips such requests)")
    doc, evs, _ = _replay(path, "--skip-bad")
    assert (doc["finished"], doc["rejected"]) == (1, 1)
    assert [e["kind"] for e in evs if e["req"] == "a"] == ["arrive", "reject"]


def test_a_prompt_over_the_token_budget_names_the_budget(tmp_path):
    """Chunked prefill off: a 100-token prompt never fits a budget of 64 (it blamed num_blocks,
    with 16,383 blocks free)."""
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(_req("a", list(range(1, 101)))) + "\n")
    refused(["replay", str(path), "--no-enable-chunked-prefill", "--max-num-batched-tokens",
             "64"], f"error: {path}:1: field 'max_num_batched_tokens': request 'a' can never be "
            "admitted: its prompt of 100 tokens never fits max_num_batched_tokens 64 (with chunked "
            "prefill off its prefill is one chunk): vLLM would wait forever; give more "
            "max_num_batched_tokens (--skip-bad skips such requests)")


def test_a_request_that_ran_and_cannot_come_back_says_so(tmp_path):
    """nemotron-nano-9b-v2 at 20 blocks: the 4,200-token prompt is admitted, preempted, and no
    empty pool re-admits it (its Mamba groups hold what no check in advance counts). It said
    'can never be admitted', which it had been; skip_bad leaves a request that ran."""
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(_req("x", list(range(1, 4201)))) + "\n")
    res = runner.invoke(app, ["replay", str(path), "--model", "nemotron-nano-9b-v2",
                              "--num-blocks", "20", "--skip-bad"])
    assert res.exit_code == 2 and res.stderr.splitlines()[-1] == (
        f"error: {path}:1: field 'num_blocks': request 'x' ran, was preempted, and can never be "
        "re-admitted: refused with nothing running and all 19 usable blocks free (num_blocks 20): "
        "vLLM would wait forever; give more num_blocks (skip_bad skips only requests that never "
        "ran)")


def test_curve_refuses_a_config_lines_groups(tmp_path):
    """A config line's groups: the curve's one pass models one full-attention group, and only
    its replayed points read the groups (a capacity the groups could not serve answered 0% while
    the one-pass points beside it ignored them); refused, naming the key and the way round."""
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 10},
                  _req("a", list(range(1, 60))), _req("b", list(range(100, 180))))
    res = runner.invoke(app, ["curve", str(path), "--capacities", "3,40", "--json"])
    assert res.exit_code == 2 and res.stderr.startswith(
        f"error: {path}:1: field 'config.groups': the curve models one full-attention group"), \
        res.output
    assert "kvcli replay --num-blocks C+1" in res.stderr and res.stdout == ""


@pytest.mark.parametrize(("groups", "blocks", "out", "need", "at"), [
    # a local chunk of 256 peaks at its last position (255): 16 full + 16 local blocks; at the
    # last token (256) the chunk has restarted and holds 1 (17 + 1 = 18: it fitted 18)
    ([{"type": "full"}, {"type": "chunked_local", "attention_chunk_size": 256}], 19, 242, 32,
     "256 of 257"),
    # a window's count cycles with the block size: 11 at tokens 113 and 127, 10 at the last
    (GROUPS, 11, 113, 11, "127 of 128"),
])
@pytest.mark.parametrize("schedule", ["--no-async-scheduling", "--async-scheduling"])
def test_the_check_in_advance_takes_the_peak_not_the_last_token(tmp_path, groups, blocks, out,
                                                                need, at, schedule):
    """Counting the last token only let these run; each preempted itself and stopped the run
    ('ran, was preempted, and can never be re-admitted', which --skip-bad cannot skip)."""
    path = _trace(tmp_path, {"groups": groups, "num_blocks": blocks},
                  {"id": "a", "prompt_token_ids": list(range(1, 17)), "output_length": out},
                  _req("c", list(range(1000, 1030))))
    doc, evs, _ = _replay(path, "--skip-bad", schedule)
    assert (doc["finished"], doc["rejected"]) == (1, 1)
    assert [e["kind"] for e in evs if e["req"] == "a"] == ["arrive", "reject"]
    res = runner.invoke(app, ["replay", str(path), schedule])
    assert res.exit_code == 2 and (
        f"request 'a' can never run: needs {need} blocks of 16 tokens at its token {at} (its "
        f"attention layers alone) but only {blocks - 1} are usable") in res.stderr
    # with `need` usable blocks it runs to its end under sync: the count is the peak, not
    # above it. (Under async a window's or chunk's blocks leave a token later, with the token
    # in flight: the local chunk needs one more there. The check stays a lower bound.)
    path.write_text(path.read_text().replace(f'"num_blocks": {blocks}',
                                             f'"num_blocks": {need + 1}'))
    doc, _, _ = _replay(path, "--no-async-scheduling")
    assert (doc["finished"], doc["rejected"]) == (2, 0)


def test_a_cpu_tier_stall_waits_for_a_far_arrival_then_stops(tmp_path):
    """With a CPU tier the refusal is not proved at once, and every idle step waited for the
    arrival 10^9 ms away (~2e8 steps, a hang): after 1,000 idle steps it waits at once, and
    with nothing left to come stops, naming the budget."""
    path = _trace(tmp_path, {"enable_chunked_prefill": False, "max_num_batched_tokens": 64},
                  _req("big", list(range(100)), timestamp=0),
                  _req("x", list(range(500, 530)), timestamp=1e9))
    res = runner.invoke(app, ["replay", str(path), "--kv-offloading-size", "1", "--skip-bad"])
    assert res.exit_code == 2 and res.stderr.splitlines()[-1] == (
        f"error: {path}:2: field 'max_num_batched_tokens': request 'big' can never be admitted "
        "(stalled for 1000 steps with nothing running: vLLM would wait forever): its prompt of "
        "100 tokens never fits max_num_batched_tokens 64 (with chunked prefill off its prefill "
        "is one chunk); give more max_num_batched_tokens; with a CPU tier skip_bad cannot tell "
        "in advance")


def test_an_idle_jump_stops_at_max_steps():
    """arrivals by step: an idle engine jumps to the next arrival's step, and went past
    max_steps (steps 1,000,000,000 reported for max_steps 1,001)."""
    import tempfile

    from kvcore.engine.replay import ReplayOptions, replay
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in (
            _req("a", list(range(1, 30)), arrival_step=0),
            _req("b", list(range(1, 30)), arrival_step=10**9))))
        s = replay(str(path), ReplayOptions(max_steps=50, arrivals="step"))
    assert (s.steps, s.finished) == (50, 1)
