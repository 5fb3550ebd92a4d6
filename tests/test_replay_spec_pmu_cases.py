"""Engine mode with speculative decoding (ngram, eagle3, mtp) and a `prefix_match_unit` finer
than the block over Mamba groups (vLLM 0.33's partial hash hits) = vLLM's schedulers, step for
step with their KV events: EAGLE's legacy drop is one hash unit in a fine-grained lookup
(`eagle_proof_margin`), a dropping full-attention group registers its partial tail at the
whole prompt floored to the unit, a Mamba group's partial tail and prompt checkpoint sit a unit
lower with the drop, a partial-block `BlockStored` carries the lookahead token, and the
speculative blocks a chunk leaves behind move to the table's end (pm77, pm79, pm98). The
answers come from tests/data/sched_spec_pmu/oracle_spec_pmu.py (its README, its DESIGN.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import check_spec_case, config_of

from kvcore.managers.fine_lookup import full_attention_hit

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_pmu"
CASES = sorted(DATA.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_spec_pmu_case(trace: Path):
    got = check_spec_case(trace)
    cfg = config_of(trace)
    assert cfg["prefix_match_unit"] < cfg["block_size"]
    assert got[0].config["prefix_match_unit"] == cfg["prefix_match_unit"]


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "pm13", "pm23", "pm24", "pm38", "pm39", "pm41", "pm44", "pm60", "pm77", "pm79",
        "pm9", "pm98", "pmtp35", "pmtp53", "pmtp56"]


class _Pool:
    """Every key cached: one block per hash."""

    def get_cached_block(self, h, group_ids):
        return [h for _ in group_ids]


@pytest.mark.pure_python     # (a stand-in pool: the compiled lookup takes a BlockPool only)
def test_the_fine_lookup_drops_one_unit_not_a_block():
    # 10 hashes of unit 4 in blocks of 16: 2 whole blocks, then 2 units into the third
    hashes = [bytes([i]) for i in range(10)]
    hit, n = full_attention_hit(hashes, 40, [0], _Pool(), 16, 4)
    assert n == 40 and hit[0] == [bytes([3]), bytes([7]), bytes([9])]
    hit, n = full_attention_hit(hashes, 40, [0], _Pool(), 16, 4, drop=True)
    assert n == 36 and hit[0] == [bytes([3]), bytes([7]), bytes([9])]
    hit, n = full_attention_hit(hashes[:8], 32, [0], _Pool(), 16, 4, drop=True)
    assert n == 28 and hit[0] == [bytes([3]), bytes([7])]
