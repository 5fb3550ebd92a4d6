"""`kvcli stats`' miss reasons where the reference group (the first full-attention group) is
coarser than the hash block (`kvcore/analysis/stats/hash_units.py`): our stream's `admit` lists
are null for it, and every miss was `unknown`; EAGLE's lookahead hashes (a prompt of whole
blocks has no hash for its last one: stats refused the `admit`, em24 and em73); and every kept
case of several block sizes reads back with the replay's totals."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from test_offload_hybrid_events import _replay, _stats
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.analysis.stats.hash_units import unit_keys
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data"
FOLDERS = ("offload_mixed", "sched_spec_eagle_mixed", "sched_mamba_mixed", "sched_chunked_mixed",
           "sched_spec_mtp_mixed")
# what the replay itself refuses (the cases' expected outcome), not stats
REFUSED = {"ox12", "ox38", "em6", "em67", "em80",      # options vLLM refuses
           "cm22", "cm28", "cm41", "cm89", "cms22", "mtm74",
           "em18", "mm13", "mm2"}                       # our stream beside partial-block hits



def test_unit_keys() -> None:
    """Units of a whole block stand for its key (its last unit's hash); the units of the block
    the prompt ends inside keep their own (partial entries)."""
    assert unit_keys([1, 2, 3, 4, 5, 6, 7], 2) == [2, 2, 4, 4, 6, 6, 7]
    assert unit_keys([1, 2, 3, 4, 5], 4) == [4, 4, 4, 4, 5]
    assert unit_keys([1, 2], 1) == [1, 2]


@pytest.mark.parametrize("case, ratio", [("ox109", 2), ("ox80", 2), ("oxr70", 2)])
def test_the_misses_are_told_apart_at_the_hash_block(case: str, ratio: int,
                                                     tmp_path: Path) -> None:
    """ox109 (groups 32, 32, 16 tokens), ox80 (Mamba 32, sliding 32, sliding 16: the Mamba
    group is the reference) and oxr70 (sliding 32, full 64; hash block 32): no miss is
    `unknown` any more; the missed tokens are the replay's prompt less its hits, and the
    `cpu_tier` reason is the replay's counted CPU hit tokens (ox109 32, ox80 384: before, all
    inside `unknown`)."""
    s, lines, _ = _replay(DATA / "offload_mixed" / f"{case}.trace.jsonl", tmp_path)
    header = orjson.loads(lines[0])
    ref = next((g for g in header["groups"] if g["type"] == "full_attention"),
               header["groups"][0])
    assert ref["block_size"] == ratio * header["hash_block_size"]
    m = _stats(lines)["misses"]
    assert m["tokens"]["unknown"] == 0
    assert m["missed_tokens"] == s.prompt_tokens - s.hit_tokens
    cpu = s.offload.get("counted_cpu_hit_tokens", 0) if s.offload else 0
    assert (cpu, m["tokens"].get("cpu_tier", 0)) == {"ox109": (32, 32), "ox80": (384, 384),
                                                      "oxr70": (0, 0)}[case]


def test_a_header_names_the_hash_block_only_beside_a_coarser_group(tmp_path: Path) -> None:
    _, lines, _ = _replay(DATA / "offload_hybrid" / "hy12.trace.jsonl", tmp_path)
    assert "hash_block_size" not in orjson.loads(lines[0])    # (every group of 4 tokens)
    _, lines, _ = _replay(DATA / "offload_mixed" / "ox1.trace.jsonl", tmp_path)
    assert orjson.loads(lines[0])["hash_block_size"] == 16    # (groups of 16, 16 and 32)


CASES = sorted(p.name.split(".")[0] + "@" + folder for folder in FOLDERS
               for p in (DATA / folder).glob("*.trace.jsonl"))


@pytest.mark.parametrize("case", CASES)
def test_every_kept_case_reads_back_with_the_replays_totals(case: str, tmp_path: Path) -> None:
    name, folder = case.split("@")
    trace = DATA / folder / f"{name}.trace.jsonl"
    if name in REFUSED:
        with pytest.raises(InputError):
            _replay(trace, tmp_path)
        return
    s = _replay(trace, tmp_path)[0]
    path = tmp_path / "ev.jsonl"                 # (the stream `_replay` wrote)
    res = CliRunner().invoke(app, ["stats", str(path), "--json"])
    assert res.exit_code == 0, res.stderr
    r = orjson.loads(res.stdout)
    assert (r["reuse"]["prompt_tokens"], r["reuse"]["hit_tokens"],
            r["eviction"]["evictions"]) == (s.prompt_tokens, s.hit_tokens, s.evictions)
    m = r["misses"]
    assert m["missed_tokens"] == s.prompt_tokens - s.hit_tokens
    # (prefix caching off hashes nothing: its missed blocks are `unknown` by design)
    caching = orjson.loads(trace.read_bytes().split(b"\n", 1)[0])["config"].get(
        "enable_prefix_caching") is not False
    assert (m["tokens"]["unknown"] == 0) == caching
    # nothing `evicted` where the replay evicted nothing (held blocks past the lcm a hit ends
    # on were: coarse_reasons.py)
    assert s.evictions or not m["tokens"]["evicted"]


def test_eagles_last_block_without_a_hash_is_last_token(tmp_path: Path) -> None:
    """Two 32-token prompts (two 16-token blocks) with EAGLE's lookahead hashes: each `admit`
    has one hash (the second block's covers token 33). Stats refused it ("prompt_hashes[0] has
    1 hashes, the prompt has 2 full blocks"); the replay hits 16 tokens of the second, and
    the blocks no lookup can reach are `last_token`: 16 + 16 of 48 missed tokens."""
    trace = tmp_path / "t.jsonl"
    ids = list(range(1, 33))
    trace.write_text("\n".join(orjson.dumps(x).decode() for x in [
        {"config": {"block_size": 16, "num_blocks": 40, "max_model_len": 256, "max_num_seqs": 2,
                    "max_num_batched_tokens": 64, "num_speculative_tokens": 2,
                    "spec_acceptance_rate": 0.9, "spec_seed": 1, "spec_method": "eagle3"}},
        {"id": "a", "prompt_token_ids": ids, "output_length": 3, "arrival_step": 0},
        {"id": "b", "prompt_token_ids": ids, "output_length": 3, "arrival_step": 10}]) + "\n")
    s, lines, _ = _replay(trace, tmp_path)
    assert orjson.loads(lines[0])["hash_lookahead"] is True
    assert (s.prompt_tokens, s.hit_tokens) == (64, 16)
    m = _stats(lines)["misses"]
    assert {k: v for k, v in m["tokens"].items() if v} == {"cold": 16, "last_token": 32}
