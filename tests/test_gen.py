"""`kvcli gen`: the generated traces have the structure they claim."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine import gen
from kvcore.engine.replay import ReplayOptions, replay

ROOT = Path(__file__).resolve().parents[1]


def test_shared_prefix_reaches_its_analytic_hit_rate(tmp_path):
    recs = gen.shared_prefix(groups=4, prompts_per_group=5, system_tokens=320,
                             question_tokens=50, output_tokens=8, block_size=16, seed=1)
    p = tmp_path / "sp.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    s = replay(str(p), ReplayOptions(mode="cache", block_size=16))
    # Each group's first prompt misses; the other 4 hit the 320-token system prompt (20 full
    # blocks). The question follows, so the last-token rule never cuts into the prefix.
    assert s.hit_tokens == 4 * 4 * 320
    assert s.hit_rate == 4 * 4 * 320 / (20 * 370)
    # At a coarser engine block the hit is whole engine blocks of the prefix: 320 // 64 * 64.
    s64 = replay(str(p), ReplayOptions(mode="cache", block_size=64))
    assert s64.hit_tokens == 4 * 4 * 320


def test_multiturn_next_turn_contains_previous_turn_and_answer():
    recs = gen.multiturn(conversations=6, turns=4, block_size=16, seed=2)
    by_conv = defaultdict(list)
    for r in recs:
        by_conv[r["conversation"]].append(r)
    assert [r["timestamp"] for r in recs] == sorted(r["timestamp"] for r in recs)
    checked = 0
    for turns in by_conv.values():
        for a, b in itertools.pairwise(turns):
            assert b["input_length"] > a["input_length"] + a["output_length"]
            full = a["input_length"] // 16
            assert b["hash_ids"][:full] == a["hash_ids"][:full]
            # The block holding the end of a's prompt and the start of its answer is a full
            # block of b: same stream id, while a's partial last block had a fresh id.
            if a["input_length"] % 16:
                assert b["hash_ids"][full] != a["hash_ids"][full]
            checked += 1
    assert checked > 5
    # Every conversation opens with the same system prompt.
    firsts = [t[0]["hash_ids"][:512 // 16] for t in by_conv.values()]
    assert all(f == firsts[0] for f in firsts)


def test_gen_cli_writes_a_replayable_trace(tmp_path):
    out = tmp_path / "chat.jsonl"
    res = CliRunner().invoke(app, ["gen", "multiturn", "--conversations", "5", "--seed", "4",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    again = CliRunner().invoke(app, ["gen", "multiturn", "--conversations", "5", "--seed", "4"])
    assert again.stdout.encode() == out.read_bytes()            # deterministic
    s = replay(str(out), ReplayOptions(block_size=16))
    assert s.requests == len(out.read_text().splitlines()) and s.hit_tokens > 0
    bad = CliRunner().invoke(app, ["gen", "shared-prefix", "--groups", "0"])
    assert bad.exit_code == 2 and "option --groups: must be >= 1" in bad.stderr


def test_shipped_samples_are_small_and_replay():
    for name in ("multiturn-chat.jsonl", "shared-prefix.jsonl"):
        p = ROOT / "traces" / name
        assert p.stat().st_size < 300_000
    s = replay(str(ROOT / "traces" / "shared-prefix.jsonl"), ReplayOptions(mode="cache"))
    assert s.hit_rate == 8 * 15 * 1024 / (128 * 1152)


@pytest.mark.parametrize(("args", "line"), [
    # (a MemoryError traceback after minutes: billions of hash ids held to be sorted)
    (["shared-prefix", "--groups", "100", "--prompts-per-group", "1000", "--system-tokens",
      "1000000"], ("error: option --prompts-per-group: the trace's block count 6,250,800,000 "
                  "is more than the limit of 100,000,000")),
    (["multiturn", "--conversations", "100000", "--turns", "50", "--user-tokens", "10000",
      "--output-tokens", "10000"], ("error: option --conversations: the trace's block count of "
                                   "about 156,410,000,000 is more than the limit of 100,000,000")),
])
def test_a_trace_too_large_to_hold_is_refused_up_front(tmp_path, args, line):
    out = tmp_path / "x.jsonl"
    res = CliRunner().invoke(app, ["gen", *args, "-o", str(out)])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [line]
    assert not out.exists()


def test_multiturn_counts_its_blocks_as_it_grows(monkeypatch):
    from kvcore.engine import gen
    from kvcore.errors import InputError

    # seed 1's trace holds 2,793 blocks; the estimate, 5 x (5 x 512 + 25 x 350 // 2) // 16 =
    # 2,167, passes a limit of 2,500: the exact count stops the trace as it grows
    monkeypatch.setattr(gen, "MAX_TRACE_BLOCKS", 2_500)
    with pytest.raises(InputError,
                       match=r"the trace's block count 2,520 is more than the limit of 2,500$"):
        gen.multiturn(conversations=5, turns=5, seed=1)
    monkeypatch.setattr(gen, "MAX_TRACE_BLOCKS", 2_793)
    assert sum(len(r["hash_ids"]) for r in gen.multiturn(conversations=5, turns=5, seed=1)) \
        == 2_793
