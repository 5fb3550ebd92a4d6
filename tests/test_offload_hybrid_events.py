"""Our event stream's CPU tier events over several KV cache groups, and `kvcli stats` on them.

The groups hash the same tokens to the same hash, so a hybrid tier holds one key per group for
one chunk of tokens ([group, hash]). Our `offload_*` events carried the hashes alone: `kvcli
stats` could not tell which group's chunk the tier dropped or stored again, and split the GPU's
`evicted` misses wrongly (`evicted_both` for a block whose full-attention chunk the tier still
held, a sliding window's key of the same hash being the one evicted). They now carry `groups`,
parallel to `keys`; a stream of one group is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import config_of

from kvcore.analysis.stats import stats_from_lines
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

DATA = Path(__file__).parent / "data"
HYBRID = sorted((DATA / "offload_hybrid").glob("*.trace.jsonl"))
MAMBA = sorted((DATA / "offload_mamba").glob("*.trace.jsonl"))     # (a Mamba group's states too)


def _replay(trace: Path, tmp_path: Path, steps: bool = False):
    """(summary, our stream's lines, the step lines) of the case as its config line says."""
    ev, st = tmp_path / "ev.jsonl", tmp_path / "steps.jsonl"
    asyn = bool(config_of(trace).get("async_scheduling"))
    with open(ev, "wb") as f, open(st, "wb") as s_out:
        s = replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=asyn),
                   JsonlEvents(f), steps_out=s_out if steps else None)
    step_lines = [json.loads(x) for x in st.read_bytes().splitlines()] if steps else []
    return s, ev.read_bytes().splitlines(), step_lines


def _stats(lines: list[bytes]) -> dict:
    return stats_from_lines("ev.jsonl", lines[0], iter(lines[1:]))


def test_each_key_names_its_group_as_the_step_lines_do(tmp_path: Path) -> None:
    """zip(groups, keys) of each event is the step line's [group, hash] keys: a store or load
    job's (by job id), the step's CPU evictions (one event a step, in eviction order)."""
    _, lines, steps = _replay(DATA / "offload_hybrid" / "hy12.trace.jsonl", tmp_path, True)
    jobs = {int(j): job["keys"] for line in steps if "step" in line
            for kind in ("load_jobs", "store_jobs") for j, job in line[kind].items()}
    evicted = {line["step"]: line["cpu_evicted"] for line in steps
               if "step" in line and line["cpu_evicted"]}
    seen = {"offload_load": 0, "offload_store": 0, "offload_evict": 0}
    for ev in map(json.loads, lines[1:]):
        kind = ev["kind"]
        if kind not in seen:
            continue
        seen[kind] += 1
        named = [list(k) for k in zip(ev["groups"], ev["keys"], strict=True)]
        assert named == (evicted.pop(ev["step"]) if kind == "offload_evict"
                         else jobs.pop(ev["job"]))
    assert not jobs and not evicted
    assert seen == {"offload_load": 3, "offload_store": 22, "offload_evict": 18}


def test_one_groups_stream_names_no_group(tmp_path: Path) -> None:
    _, lines, _ = _replay(DATA / "offload_cases" / "gpu_small_cpu_return.trace.jsonl", tmp_path)
    tier = [json.loads(x) for x in lines if b'"kind":"offload_' in x]
    assert tier and all("groups" not in ev for ev in tier)


@pytest.mark.parametrize("trace", HYBRID + MAMBA, ids=lambda p: p.name.split(".")[0])
def test_stats_of_a_hybrid_tier_agree_with_the_replays_summary(trace: Path,
                                                              tmp_path: Path) -> None:
    s, lines, _ = _replay(trace, tmp_path)
    report = _stats(lines)
    cpu, off = report["cpu_tier"], s.offload
    assert (cpu["cpu_hit_tokens"], cpu["chunks_loaded"], cpu["chunks_stored"],
            cpu["cpu_evictions"], cpu["failed_offers"], cpu["max_resident_chunks"],
            cpu["resident_chunks_end"], cpu["loads"], cpu["stores"],
            cpu["hit_rate_with_cpu"]) == \
        (off["counted_cpu_hit_tokens"], off["chunks_loaded"], off["chunks_stored"],
         off["cpu_evictions"], off["alloc_failures"], off["max_cpu_used"], off["cpu_used_end"],
         off["load_jobs"], off["store_jobs"], off["hit_rate_with_cpu"])
    assert report["source"]["summary_mismatches"] == {}


# Keyed by hash alone, hy12 said evicted 68 / evicted_both 96 tokens, hy917 4 / 44. In hy12 the
# chunk of hash 15713903789764271317 is stored in its three groups at step 37 and group 1's key
# alone is evicted at step 70; h12r13, admitted at step 86, misses that block on the GPU while
# the tier still holds the full-attention group's chunk: not `evicted_both`. (Each block's
# reason was checked against the step lines' [group, hash] evictions and stores.) Group 1 being
# a sliding window whose chunks that hit needed, it is `cpu_window` (test_stats_cpu_window.py):
# of the 100 and 36 tokens these said `evicted` before that reason, 80 and 32 are.
@pytest.mark.parametrize(("case", "evicted", "both", "window"),
                         [("hy12", 20, 64, 80), ("hy917", 4, 12, 32)])
def test_evicted_both_is_the_reference_groups_chunk(case: str, evicted: int, both: int,
                                                    window: int, tmp_path: Path) -> None:
    _, lines, _ = _replay(DATA / "offload_hybrid" / f"{case}.trace.jsonl", tmp_path)
    tokens = _stats(lines)["misses"]["tokens"]
    assert (tokens["evicted"], tokens["evicted_both"], tokens["cpu_window"]) == \
        (evicted, both, window)
