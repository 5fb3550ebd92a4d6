"""`kvcli stats` over KV cache groups none of which is at the hash block (32 and 48 tokens,
hashed at 16): our stream's per-group `admit` lists are all null there, and every missed full
block was `unknown`. The `admit` now carries the chain itself (`chain_hashes`,
`chain_first_tokens`, `chain_content_hashes`; `engine/admit_fields.py`), which
`stats/hash_units.py` reads."""

from __future__ import annotations

import math
import random
from pathlib import Path

import orjson
import pytest
from test_offload_hybrid_events import _replay, _stats
from typer.testing import CliRunner

from kvcli.app import app

P = list(range(1, 201))
B = P[:150] + list(range(1001, 1031))      # shares 150 tokens with P, then goes on otherwise


def _trace(tmp_path: Path, sizes: list[int], requests: list[dict], **config) -> Path:
    t = tmp_path / "t.jsonl"
    cfg = {"block_size": 16, "num_blocks": 40, "max_model_len": 256, "max_num_seqs": 2,
           "max_num_batched_tokens": 256,
           "groups": [{"type": "full", "block_size": b} for b in sizes], **config}
    t.write_text("\n".join(orjson.dumps(x).decode() for x in [{"config": cfg}, *requests]) + "\n")
    return t


def _two(salt: str | None = None) -> list[dict]:
    extra = {} if salt is None else {"cache_salt": salt}
    return [{"id": "a", "prompt_token_ids": P, "output_length": 2, "arrival_step": 0, **extra},
            {"id": "b", "prompt_token_ids": B, "output_length": 2, "arrival_step": 10, **extra}]


def _admits(lines: list[bytes]) -> list[dict]:
    return [e for e in map(orjson.loads, lines[1:]) if e["kind"] == "admit"]


def test_the_chain_is_written_only_where_no_group_is_at_the_hash_block(tmp_path: Path) -> None:
    """Groups of 32 and 48: the header's hash block is 16, every per-group list null and the
    chain written once: a's 200 tokens are 12 hashes and 13 first tokens (the partial tail's
    included), the same hashes a group of 16 tokens gets for the prompt. With a group at 16
    there is no chain field (that group's list is the chain)."""
    _, lines, _ = _replay(_trace(tmp_path, [16, 48], _two()), tmp_path)
    fine = _admits(lines)[0]
    assert "chain_hashes" not in fine and fine["prompt_hashes"][1] is None
    _, lines, _ = _replay(_trace(tmp_path, [32, 48], _two()), tmp_path)
    assert orjson.loads(lines[0])["hash_block_size"] == 16
    a = _admits(lines)[0]
    assert a["prompt_hashes"] == a["first_tokens"] == [None, None]
    assert a["chain_hashes"] == fine["prompt_hashes"][0] and len(a["chain_hashes"]) == 12
    assert a["chain_first_tokens"] == list(range(1, 201, 16))
    assert "chain_content_hashes" not in a


def test_a_salted_request_carries_its_chain_without_the_salt(tmp_path: Path) -> None:
    """With a cache salt the `admit` also has the content chain: the hashes the same prompt
    has unsalted, as a run without the salt writes them."""
    _, lines, _ = _replay(_trace(tmp_path, [32, 48], _two()), tmp_path)
    plain = _admits(lines)[0]["chain_hashes"]
    _, lines, _ = _replay(_trace(tmp_path, [32, 48], _two("s1")), tmp_path)
    a = _admits(lines)[0]
    assert a["hash_domain"] == "salt=s1" and a["chain_content_hashes"] == plain
    assert a["chain_hashes"] != plain and len(a["chain_hashes"]) == 12


def test_no_miss_is_unknown_with_the_chain(tmp_path: Path) -> None:
    """a (200 tokens, cold) then b (180, hits 96: hits end on the groups' lcm): 284 missed
    tokens, none `unknown`; the same stream without the chain fields (a stream written before
    them) leaves every missed hash block `unknown` (192 + 80 tokens) and only the partial tails
    (8 + 4) `partial_block`."""
    s, lines, _ = _replay(_trace(tmp_path, [32, 48], _two()), tmp_path)
    assert (s.prompt_tokens, s.hit_tokens, s.evictions) == (380, 96, 0)
    m = _stats(lines)["misses"]
    assert m["missed_tokens"] == 284 and m["tokens"]["unknown"] == 0
    old = [lines[0]] + [orjson.dumps({k: v for k, v in e.items() if not k.startswith("chain_")})
                        for e in map(orjson.loads, lines[1:])]
    m = _stats(old)["misses"]
    assert {k: v for k, v in m["tokens"].items() if v} == {"unknown": 272, "partial_block": 12}


def test_the_reasons_are_settled_at_the_block_and_the_lcm(tmp_path: Path) -> None:
    """The same case by reason. a: 192 tokens `cold` (12 hash blocks), its partial tail 8.
    b hits 96 (the lcm of 32 and 48) and misses 84, all `partial_block`: 96-128 (held by the
    32-token group, but no hit ends at 128), 128-160 (a went on otherwise inside that block:
    judged on the block's key, both its hash blocks; the second read `cold` before) and 160-180
    (the block the prompt ends inside: its tail). Before: 32 `evicted` in a replay that evicted
    nothing, 32 `cold` and 20 `partial_block`."""
    s, lines, _ = _replay(_trace(tmp_path, [32, 48], _two()), tmp_path)
    assert (s.hit_tokens, s.evictions) == (96, 0)
    m = _stats(lines)["misses"]
    assert {k: v for k, v in m["tokens"].items() if v} == {"cold": 192, "partial_block": 92}
    assert {k: v for k, v in m["blocks"].items() if v} == {"cold": 12, "partial_block": 4}
    assert {k: v for k, v in m["requests"].items() if v} == {"cold": 1, "partial_block": 2}


def test_a_chain_of_the_wrong_length_names_its_line_and_field(tmp_path: Path) -> None:
    """An edited `admit` whose chain has fewer first tokens than hashes: one line naming the
    file, the line and the field, exit 2 (every error of such an `admit` named
    `prompt_hashes`' nulls: "[0] must be a list of whole numbers, got null")."""
    _replay(_trace(tmp_path, [32, 48], _two()), tmp_path)
    path = tmp_path / "ev.jsonl"
    lines = path.read_bytes().splitlines()
    at = next(i for i, x in enumerate(lines) if b'"req":"b"' in x and b'"admit"' in x)
    ev = orjson.loads(lines[at])
    ev["chain_first_tokens"] = ev["chain_first_tokens"][:2]
    lines[at] = orjson.dumps(ev)
    path.write_bytes(b"\n".join(lines) + b"\n")
    r = CliRunner().invoke(app, ["stats", str(path), "--json"])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.splitlines()[-1] == (
        f"error: {path}:{at + 1}: field 'chain_first_tokens': bad 'admit' event: 2 first "
        "tokens for 11 chain_hashes")


def _follow_up(tmp_path: Path, arrival: int, asyn: bool) -> tuple[int, dict]:
    """h1 (30 tokens, its 40 outputs given) and h2: h1's prompt and first 34 outputs (two
    32-token blocks) and 20 tokens more, over groups of 32 and 16 tokens."""
    p1, out = list(range(100, 130)), list(range(5000, 5040))
    t = _trace(tmp_path, [32, 16], [
        {"id": "h1", "prompt_token_ids": p1, "output_token_ids": out, "output_length": 40,
         "arrival_step": 0},
        {"id": "h2", "prompt_token_ids": p1 + out[:34] + list(range(7000, 7020)),
         "output_length": 2, "arrival_step": arrival}],
               num_blocks=64, max_num_batched_tokens=64, async_scheduling=asyn)
    s, lines, _ = _replay(t, tmp_path)
    m = _stats(lines)["misses"]
    return s.hit_tokens, {k: v for k, v in m["tokens"].items() if v}


def test_a_coarse_block_in_flight_moves_whole(tmp_path: Path) -> None:
    """h2 arrives at step 34: in sync h1 has cached its second 32-token block and h2 hits 64;
    under async scheduling the token completing it is still in flight, h2 hits 32 and that
    block (both its hash blocks, 32 tokens) is `in_flight`, where it was 16 `in_flight` and 16
    `cold`. The partial tails: h1's 30 tokens, h2's 20."""
    assert _follow_up(tmp_path, 34, False) == (64, {"partial_block": 50})
    assert _follow_up(tmp_path, 34, True) == (32, {"partial_block": 50, "in_flight": 32})


def _random_trace(seed: int, tmp_path: Path) -> Path:
    """Two or three full-attention groups whose gcd is none of their sizes, prompts sharing
    random prefixes, a pool small enough to evict."""
    rng = random.Random(seed)
    while True:
        sizes = [rng.choice([16, 24, 32, 40, 48, 64]) for _ in range(rng.choice([2, 3]))]
        if math.gcd(*sizes) not in sizes and math.lcm(*sizes) <= 192:
            break
    bases = [[rng.randrange(1, 30000) for _ in range(240)] for _ in range(3)]
    reqs = []
    for i in range(24):
        p = rng.choice(bases)[:rng.randrange(0, 200)]
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 60))]
        reqs.append({"id": f"r{i}", "prompt_token_ids": p, "output_length": rng.randrange(1, 9),
                     "arrival_step": i * rng.choice([1, 2, 4])})
    return _trace(tmp_path, sizes, reqs, num_blocks=rng.choice([24, 40, 80]),
                  max_model_len=320, async_scheduling=rng.random() < 0.5)


@pytest.mark.parametrize("seed", range(1, 13))
def test_generated_cases_read_back_with_the_replays_totals(seed: int, tmp_path: Path) -> None:
    s, lines, _ = _replay(_random_trace(seed, tmp_path), tmp_path)
    assert "hash_block_size" in orjson.loads(lines[0])
    r = _stats(lines)
    assert (r["reuse"]["prompt_tokens"], r["reuse"]["hit_tokens"],
            r["eviction"]["evictions"]) == (s.prompt_tokens, s.hit_tokens, s.evictions)
    m = r["misses"]
    assert m["missed_tokens"] == s.prompt_tokens - s.hit_tokens
    assert m["tokens"]["unknown"] == 0
    # (nothing `evicted` where nothing was: held blocks past the lcm a hit ends on were)
    assert s.evictions or not m["tokens"]["evicted"]
    by_evictor = sum(e["blocks"] for e in m["by_evictor"])
    assert by_evictor <= m["blocks"]["evicted"]
