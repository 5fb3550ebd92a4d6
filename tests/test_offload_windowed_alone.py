"""The CPU tier over one sliding-window or chunked-local KV cache group and nothing else, step
for step against vLLM 0.33. It went through the one-group connector, written for full attention
(whose table never holds a null block), and crashed with a KeyError in `_unfence`; vLLM applies
its windowed-group rules to such a group as to any, so it takes the hybrid connector.

The 6 recorded cases of `data/offload_windowed_alone/` (README there; drawn by
`data/offload_hybrid/make_alone.py`, answered by the patched oracle) replayed with `--arrivals
step` in the mode their config line names, as `test_offload_hybrid` compares its cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of
from typer.testing import CliRunner

from kvcli.app import app

DATA = Path(__file__).parent / "data" / "offload_windowed_alone"
CASES = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: int(t.name[2:].split(".")[0]))


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_windowed_alone_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


def test_the_cases_cover_both_kinds_both_modes_and_retention() -> None:
    kinds, modes, retention = set(), set(), set()
    totals = {"cpu_hit_tokens": 0, "cpu_evictions": 0, "lookup_deferrals": 0, "load_jobs": 0}
    for t in CASES:
        cfg = config_of(t)
        kinds.add(cfg["groups"][0]["type"])
        modes.add(bool(cfg.get("async_scheduling")))
        retention.add(cfg.get("prefix_cache_retention_interval", 0))
        off = answer_of(t)[-1]["summary"]["offload"]
        for k in totals:
            totals[k] += off[k]
    assert (len(CASES), kinds, modes, retention) == (
        6, {"sliding_window", "chunked_local"}, {False, True}, {0, 1, 4, 32})
    # (vLLM's summaries of the six)
    assert totals == {"cpu_hit_tokens": 866, "cpu_evictions": 168, "lookup_deferrals": 8,
                      "load_jobs": 29}


def test_the_fuzz_case_that_crashed_runs(tmp_path: Path) -> None:
    """The fuzz's case (KeyError in `_unfence`): a 1-token window, 2-token blocks, one 8-token
    chunk; the window keeps nothing a chunk could store, so nothing is stored (as vLLM, which
    answers the same trace with max_model_len 40 and 16 batched tokens: no store job)."""
    path = tmp_path / "c4.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (
        {"config": {"block_size": 2, "num_blocks": 23,
                    "groups": [{"type": "sliding_window", "sliding_window": 1}],
                    "kv_offloading_size_chunks": 1, "offload_block_size": 8,
                    "offload_prompt_only": False, "async_scheduling": False}},
        {"id": "a", "prompt_token_ids": list(range(1, 15)), "output_length": 4})) + "\n")
    r = CliRunner().invoke(app, ["replay", str(path), "--arrivals", "step", "--json"])
    assert (r.exit_code, r.stderr) == (0, ""), r.output
    off = json.loads(r.stdout)["offload"]
    assert (off["store_jobs"], off["store_offers"], off["cpu_num_chunks"],
            off["tokens_per_chunk"]) == (0, 0, 1, 8)
