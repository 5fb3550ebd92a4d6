"""`replay --model-config` of a small Unlimited-OCR model = vLLM 0.33's schedulers over the
groups vLLM's planner builds for it, step for step with their KV events.

tests/data/refused_lifted/tiny-unlimited-ocr.config.json: 3 plain-attention layers with
rswa_window 32: one `rswa` group at block 16 under vLLM's RSWAManager (the blocks between the
prompt and the last 32 computed tokens freed), prefix caching off as vLLM turns it off. The
answers come from tests/data/sched_uocr/make_uocr.py (the groups: vLLM's `get_kv_cache_groups`)
and ../managers_033/record_sched.py (its README). Read as plain full attention, the steps
would differ (22 of the 30 recorded): 11 of these 12.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_sched import (
    answer_of,
    assert_matches,
    check_model_case,
    config_of,
    replay_case,
    without_groups,
)

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted((DATA / "sched_uocr").glob("*.trace.jsonl"))
MODEL = DATA / "refused_lifted" / "tiny-unlimited-ocr.config.json"


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_uocr_case(trace: Path, tmp_path: Path):
    assert "error" not in answer_of(trace)[-1]
    check_model_case(trace, MODEL, tmp_path)


@pytest.mark.parametrize("name", ["uocr_14", "uocr_21"])
def test_caching_asked_is_still_off(name: str, tmp_path: Path):
    """A config line asking for prefix caching replays as vLLM serves it: off, the same steps,
    with a warning (uocr_21: three preemptions, which a prefix cache would have changed)."""
    trace = DATA / "sched_uocr" / f"{name}.trace.jsonl"
    cfg = config_of(trace)
    lines = without_groups(trace, tmp_path).read_text().splitlines()
    first = json.loads(lines[0])
    first["config"]["enable_prefix_caching"] = True
    asked = tmp_path / f"asked-{trace.name}"
    asked.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    run = replay_case(asked, async_scheduling=cfg["async_scheduling"], model_config=str(MODEL))
    assert_matches(answer_of(trace), run, asyn=cfg["async_scheduling"],
                   kv_events=cfg["kv_events"])
    assert any("turns prefix caching off" in w for w in run[0].warnings), run[0].warnings
