"""Engine mode with EAGLE-3 speculative decoding = vLLM 0.33's schedulers with an eagle3
`SpeculativeConfig`, step for step (docs/replay-engine.md, "Speculative decoding"): K lookahead
slots on every allocation; with prefix caching, block hashes that cover the token after each
block (vLLM's default: `kvcore.lookahead_hashes`, and the events' `lookahead_token_ids`) or, with
`disable_lookahead_block_hashes`, the legacy hashes and the EAGLE block drop. The answers come
from tests/data/sched_spec_eagle/oracle_eagle.py (its DESIGN.md lists the rules).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle_sched import check_spec_case

from kvcore.hashing import BlockHasher, sha256
from kvcore.request import Request

DATA = Path(__file__).resolve().parent / "data" / "sched_spec_eagle"
CASES = sorted(DATA.glob("*.trace.jsonl"))


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:-12])
def test_eagle_case(trace: Path):
    assert check_spec_case(trace)[0].config["spec_method"] == "eagle3"


def test_a_block_is_hashed_once_the_token_after_it_exists():
    h = BlockHasher(4, lookahead=True)
    r = Request("r", list(range(8)), h)
    # block [4, 8) waits for token 8; block [0, 4) covers token 4 too
    assert r.block_hashes == [sha256((h.none_hash, (0, 1, 2, 3), (None, 4)))]
    r.append_output_token_ids(99)
    assert r.block_hashes[1] == sha256((r.block_hashes[0], (4, 5, 6, 7), (None, 99)))
    assert r.block_hashes[0] != Request("p", list(range(8)), BlockHasher(4)).block_hashes[0]


def test_the_cases_are_all_there():
    assert [t.name.split(".")[0] for t in CASES] == [
        "aseed90106", "aseed90110", "aseed90114", "aseed90118", "aseed90119", "kseed90100",
        "kseed90101", "kseed90103", "seed90100", "seed90102", "seed90118", "seed90119"]
