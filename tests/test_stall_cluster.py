"""`kvcli cluster` and a waiting head no empty pool admits (`kvcore.engine.stall`): a replica
learns of its requests only as they are routed, may reject every one of them, and leaves no
--events folder behind when the run fails. The single-replay rules are tests/test_stall.py."""

from __future__ import annotations

import json

import pytest
from test_hostile_options import refused, runner
from test_stall import GROUPS, _req, _trace

from kvcli.app import app


def test_a_cluster_replica_whose_requests_are_all_skipped_is_no_error(tmp_path):
    """round_robin sends 'b' alone to replica 1: every request there is rejected, which stopped
    the cluster with "no request fits" (a replica's check); only the whole cluster's counts."""
    up_front = ("needs 29 blocks of 16 tokens at its last token (its attention layers alone) but "
                "only 11 are usable (num_blocks 12)")
    at_once = ("can never be admitted: refused with nothing running and all 11 usable blocks "
               "free (num_blocks 12)")
    for big, why in ((list(range(1, 400)), up_front), (list(range(200, 300)), at_once)):
        path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12},
                      _req("a", list(range(1, 50))), _req("b", big), _req("c", list(range(1, 30))))
        res = runner.invoke(app, ["cluster", str(path), "--replicas", "2", "--skip-bad", "--json"])
        assert res.exit_code == 0, res.output
        assert f"round_robin replica 1: skipped 1 request(s) that can never fit, counted as " \
               f"rejected and left out of the hit rate ({len(big)} of {len(big)} prompt tokens):" \
               f" {path}:3: {why}" in res.stderr
        reps = json.loads(res.stdout)["routers"][0]["replicas"]
        assert [(r["requests"], r["rejected"]) for r in reps] == [(2, 0), (1, 1)]
        path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12}, _req("b", big),
                      _req("b2", big))
        refused(["cluster", str(path), "--replicas", "2", "--skip-bad"],
                f"error: {path}:2: field 'num_blocks': no request fits: {why}")


@pytest.mark.parametrize("metrics", [[], ["--metrics-interval-ms", "0"]])
@pytest.mark.parametrize(("replicas", "counts"), [(1, [(2, 1)]), (2, [(1, 1), (1, 0)])])
def test_a_cluster_replica_skips_under_priority_and_waits_for_its_arrivals(
        tmp_path, metrics, replicas, counts):
    """A replica learns of its requests only as they are routed: it waited for none (stalled
    for 1,000 steps, exit 2) or never saw that none was left (the metrics samples kept its
    horizon finite). Now 'bad' is rejected once the last request is routed (with 2 replicas to
    the other one: the waiting replica is woken) and nothing is left that could lift it."""
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12},
                  _req("bad", list(range(200, 300)), timestamp=0, priority=5),
                  _req("ok", list(range(1, 30)), timestamp=3_600_000, priority=0))
    res = runner.invoke(app, ["cluster", str(path), "--replicas", str(replicas), "--routers",
                              "round_robin", "--policy", "priority", "--skip-bad", "--json",
                              *metrics])
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)["routers"][0]
    assert [(x["requests"], x["rejected"]) for x in r["replicas"]] == counts
    assert r["replicas"][0]["steps"] < 1100


def test_a_failed_cluster_leaves_no_events_folders(tmp_path):
    path = _trace(tmp_path, {"groups": GROUPS, "num_blocks": 12},
                  _req("a", list(range(1, 50))), _req("b", list(range(200, 300))))
    out, given = tmp_path / "made", tmp_path / "given"
    given.mkdir()
    for folder in (out, given):
        res = runner.invoke(app, ["cluster", str(path), "--replicas", "2", "--events",
                                  str(folder)])
        assert res.exit_code == 2 and "request 'b' can never be admitted" in res.stderr
    assert not out.exists() and list(given.iterdir()) == []   # (a folder given stays)
