"""The CPU tier over hybrid KV cache groups (full + sliding window, full + chunked local, in
either order), step for step against vLLM 0.33.

The 12 recorded cases of `data/offload_hybrid/` (README there: a patched copy of the oracle's
`sched_offload` builds `sched.py`'s `groups` and offloads every group, as vLLM does) replayed
with `--arrivals step`, each in the scheduling mode its config line names: the step lines
(lookups, deferrals, load and store jobs with their `group_sizes` and [group, hash] keys, per
group store offers, flushes, evictions, CPU occupancy), the request lines, the summary's
`offload` object and vLLM's event batches, as `test_offload_replay` compares one group.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of

from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

DATA = Path(__file__).parent / "data" / "offload_hybrid"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: int(t.name[2:].split(".")[0]))


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_hybrid_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


def test_the_cases_cover_every_layout() -> None:
    """Every group layout, both modes, CPU hits, evictions and deferred lookups."""
    layouts = set()
    totals = {"cpu_hit_tokens": 0, "cpu_evictions": 0, "lookup_deferrals": 0}
    modes = set()
    for t in CASES:
        cfg = config_of(t)
        layouts.add(tuple(g["type"] for g in cfg["groups"]))
        modes.add(bool(cfg.get("async_scheduling")))
        off = answer_of(t)[-1]["summary"]["offload"]
        for k in totals:
            totals[k] += off[k]
    assert {("full", "sliding_window"), ("sliding_window", "full"), ("full", "chunked_local"),
            ("chunked_local", "full"), ("full", "sliding_window", "sliding_window")} <= layouts
    assert modes == {False, True} and all(totals.values()), totals


def test_a_models_chunk_is_one_block_id_of_the_pool_as_kvcli_config_says():
    """vLLM sizes a chunk from the KV cache tensor over its blocks (offloading/config.py:
    175-185): the groups alias from byte 0, so gpt-oss-20b's chunk is one group's 12 layers
    (393,216 bytes), not its two groups' (786,432: 2,730 chunks in 2 GiB, half the tier)."""
    import json

    from typer.testing import CliRunner

    from kvcli.app import app

    runner = CliRunner()
    trace = Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl"
    r = runner.invoke(app, ["replay", str(trace), "--model", "gpt-oss-20b", "--num-blocks",
                            "2000", "--kv-offloading-size", "2", "--json"])
    assert r.exit_code == 0, r.output
    tier = json.loads(r.stdout)["offload"]
    c = runner.invoke(app, ["config", "gpt-oss-20b", "--gpu-memory-gib", "40",
                            "--kv-offloading-size", "2", "--json"])
    assert c.exit_code == 0, c.output
    sized = json.loads(c.stdout)["cpu_offload"]
    assert (tier["cpu_num_chunks"], tier["kv_bytes_per_chunk"]) == (5461, 393216) == (
        sized["cpu_num_chunks"], sized["kv_bytes_per_chunk"])
    # each group's key copies that group's block: bytes = chunks x 393,216
    assert tier["bytes_loaded"] == tier["chunks_loaded"] * 393216 > 0


def test_cache_mode_rejects_a_prompt_a_local_group_cannot_hold_whole(tmp_path: Path) -> None:
    """Cache mode allocates a prompt at once: a chunked-local group holds all its blocks then
    (none is computed yet, so none is skipped), more than the pool here though the engine's
    start-up check passes. The request is rejected and the next one runs (its lookup and
    connector state used to stay behind: KeyError on the next request's lookups)."""
    import json

    cfg = {"block_size": 4, "num_blocks": 32, "max_model_len": 64, "max_num_seqs": 2,
           "max_num_batched_tokens": 8, "kv_offloading_size_chunks": 100,
           "offload_block_size": 16, "offload_prompt_only": False,
           "groups": [{"type": "chunked_local", "attention_chunk_size": 8}, {"type": "full"}]}
    reqs = [{"id": "big", "prompt_token_ids": list(range(1, 63)), "output_length": 1},
            {"id": "small", "prompt_token_ids": list(range(1, 33)), "output_length": 1},
            {"id": "again", "prompt_token_ids": list(range(1, 33)), "output_length": 1}]
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps(x) for x in [{"config": cfg}, *reqs]) + "\n")
    kw = {"mode": "cache"}
    s = replay(str(trace), ReplayOptions(**kw, given=frozenset(kw)), warn=lambda *a: None)
    assert (s.requests, s.rejected, s.finished) == (3, 1, 2)
    assert s.hit_tokens == 28 and s.offload["store_jobs"] >= 1
    assert s.offload["cpu_pinned_end"] == s.offload["jobs_in_flight_end"] == 0
