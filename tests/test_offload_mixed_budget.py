"""The sync-load budget's least load over KV cache groups of several block sizes.

vLLM's lookup refuses, in each group's pass, a hit shorter than that group's own chunk
(`offloading/scheduler.py`, "We can only load less than a chunk, so skip"), so a hit is the
largest group's chunk at least; `_reserve_sync_load` charges it at the tier's bytes a token, the
sum over the groups of each group's block over its tokens. ox13 (tests/data/offload_mixed): two
sliding-window groups of 32- and 64-token blocks, 4,194,304 bytes a block each: 131,072 +
65,536 = 196,608 bytes a token; the least load is 64 x 196,608 = 12,582,912 bytes (kvcli said
group 0's 32-token chunk, 6,291,456; one chunk of each group would be 8,388,608)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

OX13 = Path(__file__).parent / "data" / "offload_mixed" / "ox13.trace.jsonl"


def _replay(budget: int, tmp_path: Path) -> tuple[list[str], list[bool]]:
    steps = tmp_path / "steps.jsonl"
    r = CliRunner().invoke(app, ["replay", str(OX13), "--arrivals", "step",
                                 "--no-async-scheduling", "--json", "--steps", str(steps),
                                 "--offload-sync-load-budget-bytes", str(budget)])
    assert r.exit_code == 0, r.stderr
    lines = [json.loads(x) for x in steps.read_text().splitlines()]
    return (json.loads(r.stdout)["warnings"],
            [j["sync"] for e in lines for j in e.get("load_jobs", {}).values()])


@pytest.mark.parametrize(("budget", "warned"), [
    (6_291_456, True), (8_388_608, True), (12_582_911, True), (12_582_912, False)])
def test_the_least_load_is_the_largest_groups_chunk_at_every_groups_bytes(
        budget: int, warned: bool, tmp_path: Path) -> None:
    warnings, syncs = _replay(budget, tmp_path)
    said = [w for w in warnings if w.startswith("option sync")]
    assert said == ([(f"option sync_load_budget_bytes has no effect: {budget:,} bytes is less "
                      "than the least load, one chunk of the largest group of 64 tokens "
                      "(12,582,912 bytes): every load stays asynchronous")] if warned else [])
    # ox13's loads are hits of 192 and 256 tokens (37,748,736 bytes at least): none inside
    assert syncs == [False] * 5


def test_a_budget_of_a_192_token_hit_loads_it_inside_the_step(tmp_path: Path) -> None:
    """The hits of 192 tokens (steps 29, 56, 86) fit 192 x 196,608 = 37,748,736 bytes; the
    256-token one (step 44) needs 50,331,648."""
    assert _replay(37_748_735, tmp_path)[1] == [False] * 5
    warnings, syncs = _replay(37_748_736, tmp_path)
    assert not [w for w in warnings if w.startswith("option sync")]
    assert syncs.count(True) == 3
