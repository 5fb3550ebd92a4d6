"""`kvcli gen b2b`: llm-d's tenants x users workload has the structure and the infinite-cache
hit rate its docstring claims."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine import gen_b2b
from kvcore.engine.replay import ReplayOptions, replay

ROOT = Path(__file__).resolve().parents[1]

# Small enough to replay in a second: 3 tenants x 4 users, 41 requests (3 rounds and 5 more, so
# the formulas' partial last round is exercised). A 330-token context ends inside the 21st block
# of 16 tokens, so F(C) = 320 < C: the block holding the context's end is the user's own.
SMALL = {"tenants": 3, "users": 4, "context_tokens": 330, "query_tokens": 50,
         "output_tokens": 30, "requests": 41, "block_size": 16}


def _cache_replay(tmp_path, recs):
    p = tmp_path / "b2b.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return replay(str(p), ReplayOptions(mode="cache", block_size=16))


def _f(x):
    return x // 16 * 16


def _by_hand(queries):
    """The docstring's formulas written out for SMALL: T=3, U=4, K=12, N=41, C=330, Q=50, A=30."""
    t, u, k, n, c, q, a = 3, 4, 12, 41, 330, 50, 30
    first = t * (u - 1) * _f(c)           # each tenant's first prompt misses, the rest hit F(C)
    if queries == "repeat":
        return first + (n - k) * _f(c + q - 1), n * (c + q)
    if queries == "fresh":
        return (n - t) * _f(c), n * (c + q)
    lens = [c + (i // k) * (q + a) + q for i in range(n)]
    return first + sum(_f(lens[i - k]) for i in range(k, n)), sum(lens)


@pytest.mark.parametrize("queries", gen_b2b.QUERIES)
def test_b2b_reaches_its_analytic_hit_rate_in_cache_mode(tmp_path, queries):
    recs = gen_b2b.b2b(**SMALL, queries=queries, seed=3)
    s = _cache_replay(tmp_path, recs)
    hits, prompt = _by_hand(queries)
    assert s.prompt_tokens == prompt
    assert s.hit_tokens == hits
    assert s.hit_rate == pytest.approx(hits / prompt, rel=1e-12)
    assert gen_b2b.expected_hit_rate(**SMALL, queries=queries) == pytest.approx(hits / prompt,
                                                                                rel=1e-12)


def test_b2b_default_hit_rate_formula():
    # The docstring's number for the defaults (150 x 5, 7,500 requests, repeat, block 16);
    # replaying the 20 MB default trace takes about a minute, so the test checks the formula
    # and the small traces above check the formula against the replay.
    assert gen_b2b.expected_hit_rate() == (150 * 4 * 6000 + 6750 * 7184) / (7500 * 7200)
    assert round(gen_b2b.expected_hit_rate(), 6) == 0.964667


def test_b2b_cycles_users_and_shares_only_the_tenant_context():
    recs = gen_b2b.b2b(**SMALL, seed=5)
    k, n_ctx = 12, 330 // 16
    # inference-perf's order: one shuffle of the K prompts, then request i sends prompt i mod K.
    assert [r["user"] for r in recs[k:]] == [r["user"] for r in recs[:len(recs) - k]]
    assert sorted(r["user"] for r in recs[:k]) == list(range(k))
    assert all(r["tenant"] == r["user"] // 4 for r in recs)
    by_user = defaultdict(list)
    for r in recs:
        by_user[r["user"]].append(r["hash_ids"])
    assert all(all(h == ids[0] for h in ids) for ids in by_user.values())   # repeat: same prompt
    ctx = {r["tenant"]: r["hash_ids"][:n_ctx] for r in recs}
    for r in recs:
        assert r["hash_ids"][:n_ctx] == ctx[r["tenant"]]
    # Nothing else is shared: tenants' contexts are disjoint, a user's tail is its own.
    tails = [set(ids[0][n_ctx:]) for ids in by_user.values()]
    owned = [set(c) for c in ctx.values()] + tails
    assert sum(map(len, owned)) == len(set().union(*owned))
    assert [r["timestamp"] for r in recs] == sorted(r["timestamp"] for r in recs)


def test_b2b_ramp_changes_rate_at_each_stage():
    recs = gen_b2b.b2b(**{**SMALL, "requests": 600}, qps=(2.0, 50.0), stage_s=20.0, seed=1)
    ts = [r["timestamp"] / 1000.0 for r in recs]
    slow = [t for t in ts if t < 20.0]
    assert 20 <= len(slow) <= 65                    # about 2/s for 20 s (40 expected)
    gaps = (ts[-1] - 20.0) / (len(ts) - len(slow))  # about 1/50 s after the stage ends
    assert 0.015 < gaps < 0.025


def _gen(*args):
    return CliRunner().invoke(app, ["gen", "b2b", *map(str, args)])


def test_b2b_cli_is_deterministic_and_replayable(tmp_path):
    out = tmp_path / "b2b.jsonl"
    args = ("--tenants", 4, "--users", 2, "--context-tokens", 200, "--query-tokens", 40,
            "--requests", 30, "--seed", 7)
    res = _gen(*args, "-o", out)
    assert res.exit_code == 0, res.output
    again = _gen(*args)
    assert again.exit_code == 0 and again.stdout.encode() == out.read_bytes()
    other = _gen(*args[:-1], 8)
    assert other.stdout.encode() != out.read_bytes()
    first = json.loads(out.read_text().splitlines()[0])
    assert first["output_length"] == 1000 and first["block_size"] == 16   # b2b's defaults
    s = replay(str(out), ReplayOptions(mode="cache", block_size=16))
    assert s.requests == 30 and s.hit_tokens == (4 * 1 * 192 + 22 * _f(239))


@pytest.mark.parametrize(("args", "says"), [
    (("--tenants", 0), "option --tenants: must be >= 1, got 0"),
    (("--users", 0), "option --users: must be >= 1, got 0"),
    (("--requests", 0), "option --requests: must be "),
    (("--query-tokens", 0), "option --query-tokens: must be >= 1, got 0"),
    (("--context-tokens", -1), "option --context-tokens: must be >= 0, got -1"),
    (("--qps", "ten"), "option --qps: must be a number or numbers separated by commas"),
    (("--qps", "3,0"), "option --qps: must be a finite number > 0, got 0.0"),
    (("--qps", "nan"), "option --qps: must be a finite number > 0"),
    (("--stage-s", 0, "--qps", "3,10"), "option --stage-s: must be a finite number > 0"),
    (("--rate", 3), "option --rate: b2b takes --qps"),
    (("--queries", "multiturn", "--requests", 10_000_000, "--tenants", 1, "--users", 1),
     "option --requests: the longest prompt of"),
])
def test_b2b_bad_option_is_one_line_naming_it(args, says):
    res = _gen(*args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], res.stderr


def test_b2b_unknown_queries_is_one_line_from_the_installed_command():
    """typer checks the choice itself; the installed command (not CliRunner) makes it one line."""
    proc = subprocess.run([sys.executable, "-c", "from kvcli.app import main; main()", "gen",
                           "b2b", "--queries", "chat"],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("error: option --queries: 'chat' is not one of"), proc.stderr


def test_qps_is_b2b_only():
    res = CliRunner().invoke(app, ["gen", "shared-prefix", "--qps", "5"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: option --qps: only b2b takes it (the others take --rate)"
