"""The cluster's ceilings follow full-attention prefixes: with a sliding-window, chunked or
Mamba group, `capacity_loss` also holds what those groups miss at any capacity, and the run
says so (a gpt-oss-20b run that never evicted showed 0.3% of capacity loss without a word)."""

from __future__ import annotations

from pathlib import Path

from kvcore.cluster.run import ClusterOptions, run_cluster
from kvcore.engine.options import ReplayOptions


def test_a_windowed_models_never_evicting_capacity_loss_is_said(tmp_path):
    # gpt-oss-20b, a pool that never evicts: the ceilings follow full-attention prefixes, the
    # sliding-window group misses some at any capacity; capacity_loss (0.3%) said nothing
    path = tmp_path / "t.jsonl"
    chat = Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl"
    path.write_text("".join(chat.read_text().splitlines(keepends=True)[:60]))
    said = []
    for model, warned in (("gpt-oss-20b", True), ("llama-3.1-8b", False)):
        out = run_cluster(str(path), ReplayOptions(model=model, num_blocks=20000, mode="cache"),
                          ClusterOptions(replicas=1, routers=(("round_robin", ()),)),
                          warn=said.append)
        res = out["routers"][0]
        assert res["evictions"] == 0 and (res["capacity_loss"] > 0) is warned
        notes = [w for w in out["warnings"] if w.startswith("the ceilings match")]
        assert notes == ([CEILING_NOTE] if warned else [])
    assert said.count(CEILING_NOTE) == 1


CEILING_NOTE = ("the ceilings match full-attention prefixes: capacity_loss also holds the hits "
                "this model's sliding_window group(s) miss at any capacity (kvcli stats on "
                "--events DIR/ROUTER tells them apart: its window and mamba_state misses)")
