"""Replaying the scheduler oracle's recorded cases and comparing with its answers, for the sync,
async and hybrid case tests (not a test module).

`replay_case` replays a token-id case with `--arrivals step`; `assert_matches` compares what the
oracle printed: the step lines (its non-idle lines under async; under sync the lines that
scheduled or preempted, the others being idle or flush steps), field for field and the scheduled
order; each request's hit, preemptions, first scheduled and finish steps; the prefix-cache stats
(first admissions and re-admissions); preemptions and steps; and with `kv_events` the vLLM event
batches, event for event.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from kvcore.engine.replay import ReplayOptions, replay
from kvcore.engine.vllm_events import VllmEvents
from kvcore.request import Request

SYNC_KEYS = ("step", "scheduled", "admitted", "preempted", "finished", "num_free_blocks")
ASYNC_KEYS = (*SYNC_KEYS, "num_free_blocks_after_schedule", "processed", "schedule_called")


def load_lines(path: Path) -> list[dict]:
    """The JSON lines of ``path``, or of ``path.gz`` where only that is kept (a large answer)."""
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        text = gzip.decompress(path.with_name(path.name + ".gz").read_bytes()).decode()
    else:
        text = path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def config_of(trace: Path) -> dict:
    return json.loads(trace.read_text().splitlines()[0])["config"]


def without_groups(trace: Path, tmp_path: Path) -> Path:
    """The case as `kvcli replay --model-config` takes it: the config line without `groups`
    (the model gives them), written under `tmp_path`."""
    lines = trace.read_text().splitlines()
    first = json.loads(lines[0])
    del first["config"]["groups"]
    out = tmp_path / trace.name
    out.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return out


def config_groups(model: Path, max_model_len: int) -> list[dict]:
    """kvcli's groups of a model's config.json as a config line writes them (its type, window
    and block size: full, sliding_window, mla, rswa), to compare with the groups vLLM's planner
    built."""
    from kvcore.models import layer_specs, read_hf_config
    from kvcore.sizing import get_kv_cache_groups
    from kvcore.specs import MLAAttentionSpec, RSWASpec, SlidingWindowSpec

    out = []
    g = read_hf_config(json.loads(model.read_text()))
    for grp in get_kv_cache_groups(layer_specs(g, max_model_len=max_model_len)):
        s = grp.kv_cache_spec
        kind = ({"type": "sliding_window", "sliding_window": s.sliding_window}
                if isinstance(s, SlidingWindowSpec) else
                {"type": "rswa", "rswa_window": s.rswa_window} if isinstance(s, RSWASpec) else
                {"type": "mla"} if isinstance(s, MLAAttentionSpec) else {"type": "full"})
        out.append({**kind, "block_size": s.block_size})
    return out


def check_model_case(trace: Path, model: Path, tmp_path: Path) -> None:
    """A case recorded over the groups vLLM planned for `model`, replayed with
    `--model-config`: kvcli's groups of the model (`config_groups`) are the config line's, and
    the run is vLLM's answer; where vLLM refused the pool at start-up, the replay (given
    num_blocks) runs it and says so in vLLM's numbers."""
    cfg = config_of(trace)
    assert config_groups(model, cfg["max_model_len"]) == cfg["groups"]
    run = replay_case(without_groups(trace, tmp_path), async_scheduling=cfg["async_scheduling"],
                      model_config=str(model))
    error = answer_of(trace)[-1].get("error")
    if error is None:
        assert_matches(answer_of(trace), run, asyn=cfg["async_scheduling"],
                       kv_events=cfg["kv_events"])
        return
    needed, usable = error.split("needs ")[1].split(" blocks, ")
    usable = usable.split(" usable")[0]
    assert any(f"needs {needed} blocks" in w and f"only {usable} are usable" in w
               and "vLLM refuses to start" in w for w in run[0].warnings), run[0].warnings


def answer_of(trace: Path, kind: str = "expected") -> list[dict]:
    """The oracle's lines for ``X.trace.jsonl`` (or the hash-id form ``X.hash.jsonl``):
    ``X.expected.jsonl`` (or ``X.<kind>.jsonl``)."""
    form = ".hash." if trace.name.endswith(".hash.jsonl") else ".trace."
    return load_lines(trace.with_name(trace.name.replace(form, f".{kind}.")))


def replay_case(trace: Path, **options):
    """(summary, step lines, request lines by id, vLLM event batches) of the case."""
    steps, reqs, events = io.BytesIO(), io.BytesIO(), io.BytesIO()
    sink = VllmEvents(events) if config_of(trace).get("kv_events") else None
    s = replay(str(trace), ReplayOptions(arrivals="step", **options), sink, steps_out=steps,
               requests_out=reqs)
    return (s, [json.loads(x) for x in steps.getvalue().splitlines()],
            {r["id"]: r for r in (json.loads(x) for x in reqs.getvalue().splitlines())},
            [json.loads(x)["events"] for x in events.getvalue().splitlines()])


def replay_recorded(trace: Path):
    """`replay_case` of a harness's recorded case (sched_pp, sched_spec): async as its config
    line says; the `k*` (knobs) cases were answered under PYTHONHASHSEED=0, vLLM's NONE_HASH
    seed, so they replay with `hash_seed` "0"."""
    seed = {"hash_seed": "0"} if trace.name.startswith("k") else {}
    return replay_case(trace, async_scheduling=config_of(trace).get("async_scheduling", False),
                       **seed)


def assert_same_steps(ours: list[dict], theirs: list[dict], keys) -> None:
    """Our step lines against vLLM's on ``keys``, and the scheduled dicts' order (vLLM's:
    running first, then admitted); a failure names the first step that differs, both lines
    (fuzz_compare prints it)."""
    mine = [{k: e[k] for k in keys} | {"order": list(e["scheduled"])} for e in ours]
    vllm = [{k: e[k] for k in keys} | {"order": list(e["scheduled"])} for e in theirs]
    if mine != vllm:
        i = next((i for i, (a, b) in enumerate(zip(mine, vllm)) if a != b),
                 min(len(mine), len(vllm)))
        raise AssertionError(f"step line {i} of {len(mine)} (vLLM: {len(vllm)}) differs:\n"
                             f"  ours: {mine[i] if i < len(mine) else None}\n"
                             f"  vLLM: {vllm[i] if i < len(vllm) else None}")


def assert_matches(expected: list[dict], run, asyn: bool, kv_events: bool) -> None:
    """Our `replay_case` result ``run`` against the oracle's lines ``expected``."""
    s, ours, by_id, ours_ev = run
    summary = expected[-1]["summary"]
    lines = expected[:-1]
    if asyn:
        keys, theirs = ASYNC_KEYS, [e for e in lines if not e.get("idle")]
    else:
        keys, theirs = SYNC_KEYS, [e for e in lines if e["scheduled"] or e["preempted"]]
    assert_same_steps(ours, theirs, keys)
    for r in summary["requests"]:
        o = by_id[r["id"]]
        assert (o["hit_tokens"], o["preemptions"], o["first_scheduled_step"], o["finish_step"]) \
            == (r["num_cached_tokens"], r["num_preemptions"], r["first_scheduled_step"],
                r["finish_step"]), r["id"]
    assert_prefix_cache_stats(s, summary)
    assert s.preemptions == summary["totals"]["preemptions"]
    assert s.steps == summary["num_steps"]
    if kv_events:
        assert ours_ev == [e["events"] for e in lines if e.get("events")]


def assert_spec_matches(expected: list[dict], run, asyn: bool) -> None:
    """Speculative decoding's part of a case (sched_spec, sched_spec_eagle): the drafts each
    step verified (our step lines' `drafts`, the harness's `spec_scheduled`) and vLLM's
    SpecDecodingStats totals against the summary's `spec_decode`."""
    lines = [e for e in expected[:-1] if not e.get("idle")] if asyn else \
        [e for e in expected[:-1] if e["scheduled"] or e["preempted"]]
    assert [e.get("drafts", {}) for e in run[1]] == [e.get("spec_scheduled", {}) for e in lines]
    spec = expected[-1]["summary"]["spec"]
    ours = run[0].spec_decode
    assert (ours["num_drafts"], ours["num_draft_tokens"], ours["num_accepted_tokens"]) == \
        (spec["num_drafts"], spec["num_draft_tokens"], spec["num_accepted_tokens"])


def assert_prefix_cache_stats(s, summary: dict) -> None:
    """The replay's hit counts against vLLM's prefix-cache stats: first admissions, and
    re-admissions after preemption against the `preempted_*` ones."""
    pcs = summary["prefix_cache_stats"]
    if not s.config["enable_prefix_caching"]:
        # vLLM looks nothing up, so it records nothing; kvcli's summary still counts the
        # admissions, with no hit (docs/replay.md)
        assert set(pcs.values()) == {0}
        reqs = summary["requests"]
        assert (s.counted_requests, s.prompt_tokens, s.hit_tokens, s.preempted_hit_tokens) == \
            (len(reqs), sum(r["prompt_len"] for r in reqs), 0, 0)
        return
    assert (s.counted_requests, s.prompt_tokens, s.hit_tokens) == \
        (pcs["requests"], pcs["queries"], pcs["hits"])
    assert (s.preempted_admissions, s.preempted_prompt_tokens, s.preempted_hit_tokens) == \
        (pcs["preempted_requests"], pcs["preempted_queries"], pcs["preempted_hits"])


def mamba_request(prompt: int, computed: int = 0, junction: int = 0) -> Request:
    """A request of `prompt` tokens at `computed`, with a shared-prefix junction (the Mamba
    split's inputs, for the unit cases of the recorded chunks)."""
    r = Request("r", list(range(prompt)))
    r.num_computed_tokens = computed
    r.shared_prefix_boundary = junction
    return r


def check_spec_case(trace: Path, expected: list[dict] | None = None, **options):
    """A recorded speculative-decoding case (sched_spec, sched_spec_eagle[_hybrid],
    sched_spec_mtp) replayed as `replay_recorded` does, `options` over its config line, against
    the oracle's answer (``expected``: the answer as given, else the recorded one): steps,
    requests, events, drafts and vLLM's spec stats. Returns the run."""
    cfg = config_of(trace)
    seed = {"hash_seed": "0"} if trace.name.startswith("k") else {}
    got = replay_case(trace, async_scheduling=cfg.get("async_scheduling", False),
                      **{**seed, **options})
    # a batch queue's lines (async scheduling or pipeline parallelism: sched_spec_pp)
    asyn = cfg.get("async_scheduling", False) or cfg.get("pipeline_parallel_size", 1) > 1
    assert got[0].config["spec_method"] == cfg.get("spec_method", "ngram")
    assert got[0].config["num_speculative_tokens"] == cfg["num_speculative_tokens"]
    expected = answer_of(trace) if expected is None else expected
    assert_matches(expected, got, asyn=asyn, kv_events=cfg.get("kv_events", False))
    assert_spec_matches(expected, got, asyn)
    return got


def check_run(trace: Path, asyn: bool) -> dict | None:
    """One recorded run (`trace`'s answer, async or not) replayed and matched step for step with
    its KV events; the trace's config line, or None where vLLM's start-up check refused it with
    two batches in flight and kvcli refuses it alike."""
    import pytest

    from kvcore.errors import InputError

    expected = answer_of(trace, "async.expected" if asyn else "expected")
    cfg = config_of(trace)
    if "error" in expected[0]:
        assert "vLLM would refuse to start" in expected[0]["error"]
        with pytest.raises(InputError, match="vLLM refuses to start"):
            replay_case(trace, async_scheduling=asyn)
        return None
    run = replay_case(trace, async_scheduling=asyn)
    assert_matches(expected, run, asyn=asyn, kv_events=cfg.get("kv_events", False))
    return cfg
