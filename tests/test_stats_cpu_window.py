"""`kvcli stats`' `cpu_window` miss reason: a block the GPU lost (`evicted`) whose full-attention
chunks the CPU tier still held, but that the tier could not serve because a windowed group's
chunks that hit needed (sliding window, chunked local, Mamba) were evicted from the tier or never
stored. vLLM's connector loads a hybrid hit only where every group has what it needs
(docs/offload.md "Hybrid models"); these blocks were reported `evicted`, which told a user
asking why the tier did not help nothing about the tier.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_offload_hybrid_events import HYBRID, MAMBA, _replay, _stats

from kvcore.analysis.stats import StreamingStats
from kvcore.analysis.stats.attribution import REASONS, TIER_REASONS
from kvcore.analysis.stats.cpu_tier import CpuTierStats
from kvcore.offload import hybrid_lookup
from kvcore.offload.hybrid import HybridConnector
from kvcore.offload.keys import HIT, HIT_PENDING, key_group

DATA = Path(__file__).parent / "data"
HY44 = DATA / "offload_hybrid" / "hy44.trace.jsonl"


def _misses(report: dict) -> dict:
    """The reasons that occur: tokens, blocks, requests."""
    m = report["misses"]
    return {k: (m["tokens"][k], m["blocks"][k], m["requests"][k])
            for k in m["reasons"] if m["tokens"][k]}


def test_a_windowed_groups_missing_chunks_are_cpu_window(tmp_path: Path) -> None:
    """hy44: block size 4, one block a chunk (C = 4), groups [full, sliding 20, sliding 8]
    (windows of 5 and 2 chunks), LRU tier of 32 chunks. h44r2 (13 tokens: blocks h0, h1, h2
    and a 1-token tail) is admitted at step 19 with no GPU hit:

    * step 3: store job 0 (h44r0) writes [0, h0], [0, h1], [1, h0], [1, h1]; group 2 (window 8)
      is offered chunks 2 and 3 only (its reachable blocks), so [2, h0] and [2, h1] are never
      stored; no step before 19 evicts [0, h0] or [0, h1] from the tier (`cpu_evicted`);
    * step 17: the GPU evicts h1 and h0 from group 0 (`evict` events): both missed blocks are
      `evicted` on the GPU, and their full-attention chunks are on the CPU (not `evicted_both`);
    * step 19, vLLM's lookup (the step line's `lookups`: [0, 0]): end = 13 - 1 = 12, chunks 0-2;
      group 0 hits chunks 0 and 1 (chunk 2 is h2, h44r2's own) -> end 8; group 1 finds a run of
      2 reaching back to chunk 0 -> end 8; group 2 finds neither chunk -> no hit. With group 2's
      chunks there the hit would have been 8 tokens: blocks 0 and 1 are `cpu_window`, 8 tokens
      (they were `evicted`).

    The run's other reasons, unchanged: h44r3 at step 19 misses h44r1's blocks that full
    attention still held on the GPU (`window`, 8); h44r12 at step 86 misses h0 and h1, whose
    full-attention chunks the tier evicted at step 54 (`evicted_both`, 8); no block is left
    `evicted` (before: 8 tokens, h44r2's two blocks)."""
    s, lines, steps = _replay(HY44, tmp_path, steps=True)
    events = [json.loads(x) for x in lines[1:]]
    admit = next(e for e in events if e["kind"] == "admit" and e["req"] == "h44r2")
    h0, h1, _ = admit["prompt_hashes"][0]
    assert (admit["step"], admit["prompt_tokens"], admit["hit_tokens"],
            admit["cpu_hit_tokens"]) == (19, 13, 0, 0)
    assert [(e["step"], e["hashes"]) for e in events if e["kind"] == "evict"
            and e["group"] == 0 and {h0, h1} & set(e["hashes"])][:2] == [(17, [h1]), (17, [h0])]
    before = [line for line in steps if "step" in line and line["step"] < 19]
    stored = [(line["step"], g, h) for line in before for job in line["store_jobs"].values()
              for g, h in job["keys"] if h in (h0, h1)]
    assert stored == [(3, 0, h0), (3, 0, h1), (3, 1, h0), (3, 1, h1)]
    assert not [k for line in before for k in line["cpu_evicted"] if k[1] in (h0, h1)]
    assert next(line for line in steps if line.get("step") == 19)["lookups"]["h44r2"] == [0, 0]

    feed = StreamingStats(watch="h44r2")
    for ev in [json.loads(lines[0]), *events]:
        feed(ev)
    report = feed.report()
    assert feed.watched()[0]["missed"] == {"cpu_window": 8, "partial_block": 5}
    assert report["misses"]["reasons"] == [*TIER_REASONS, "cpu_window"]
    assert _misses(report) == {"cold": (96, 24, 7), "partial_block": (30, 1, 13),
                               "window": (8, 2, 1), "evicted_both": (8, 2, 1),
                               "cpu_window": (8, 2, 1)}
    reuse = report["reuse"]
    assert report["misses"]["missed_tokens"] + reuse["hit_tokens"] == reuse["prompt_tokens"] \
        == s.prompt_tokens


def test_the_table_has_a_cpu_window_row(tmp_path: Path) -> None:
    """`kvcli stats` without --json: the reasons table lists `cpu_window` after `evicted_both`
    (hy44: 8 of 150 missed tokens, 2 blocks, 1 request)."""
    from typer.testing import CliRunner

    from kvcli.app import app

    _, lines, _ = _replay(HY44, tmp_path)
    path = tmp_path / "hy44.ev.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    res = CliRunner().invoke(app, ["stats", str(path)])
    assert res.exit_code == 0, res.output
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in res.stdout.splitlines()
            if line.startswith("│ ") and ("evicted" in line or "cpu_" in line)]
    assert rows[-2:] == [["evicted_both", "8", "5.33%", "2", "1"],
                         ["cpu_window", "8", "5.33%", "2", "1"]]
    assert "150 missed tokens" in res.stdout


# Mamba groups are windowed groups of one chunk: om31 (block 8, two blocks a chunk, three Mamba
# groups and a full one) and om57 lose 6 blocks each to a Mamba state the tier did not hold.
@pytest.mark.parametrize(("case", "reasons"), [
    ("offload_hybrid/hy12", {"evicted": 20, "evicted_both": 64, "cpu_window": 80}),
    ("offload_hybrid/hy2", {"evicted": 0, "evicted_both": 0, "cpu_window": 448}),
    ("offload_mamba/om31", {"evicted": 80, "evicted_both": 0, "cpu_window": 48}),
    ("offload_mamba/om57", {"evicted": 0, "evicted_both": 32, "cpu_window": 48}),
])
def test_cpu_window_tokens(case: str, reasons: dict, tmp_path: Path) -> None:
    s, lines, _ = _replay(DATA / f"{case}.trace.jsonl", tmp_path)
    report = _stats(lines)
    m = report["misses"]
    assert {k: m["tokens"][k] for k in reasons} == reasons
    assert m["missed_tokens"] + report["reuse"]["hit_tokens"] == s.prompt_tokens


def test_one_group_and_no_tier_streams_have_no_cpu_window(tmp_path: Path) -> None:
    """`cpu_window` is listed only where it can occur: a tier over full and windowed groups. A
    one-group tier stream keeps its reasons and numbers (before this reason: the same), and so
    does a hybrid stream with no tier."""
    _, lines, _ = _replay(DATA / "offload_cases" / "cpu_full_arc.trace.jsonl", tmp_path)
    report = _stats(lines)
    assert report["misses"]["reasons"] == list(TIER_REASONS)
    assert _misses(report) == {"cold": (752, 47, 10), "evicted": (16, 1, 1),
                               "partial_block": (98, 0, 16), "cpu_tier": (16, 1, 1),
                               "evicted_both": (176, 11, 7)}
    assert b"cpu_window" not in json.dumps(report).encode()
    trace = tmp_path / "hy44_no_tier.trace.jsonl"
    first, *rest = HY44.read_text().splitlines(keepends=True)
    config = json.loads(first)
    del config["config"]["kv_offloading_size_chunks"]
    trace.write_text(json.dumps(config) + "\n" + "".join(rest))
    _, lines, _ = _replay(trace, tmp_path)
    assert _stats(lines)["misses"]["reasons"] == list(REASONS)


class _WindowedAllThere:
    """The tier's manager as the hypothesis reads it: every windowed group's chunk is on the
    CPU, and a chunk being written counts (`cpu_window.py` says why)."""

    def __init__(self, manager, windowed: tuple[int, ...]) -> None:
        self.manager = manager
        self.windowed = set(windowed)

    def lookup(self, key: bytes) -> str:
        if key_group(key) in self.windowed:
            return HIT
        r = self.manager.lookup(key)
        return HIT if r == HIT_PENDING else r


@pytest.mark.pure_python    # patches the connector's lookup and the stats' split
@pytest.mark.parametrize("trace", HYBRID + MAMBA, ids=lambda p: p.name.split(".")[0])
def test_the_hit_without_windowed_gaps_is_kvclis_own_lookup(trace: Path, tmp_path: Path,
                                                            monkeypatch) -> None:
    """At every counted admission, the end of the hit `kvcli stats` reckons the tier would have
    given with the windowed groups' chunks all there is what kvcli's own lookup
    (`hybrid_lookup.lookup`, step for step vLLM's) answers when those chunks are all there."""
    _against_the_lookup(trace, tmp_path, monkeypatch)


@pytest.mark.pure_python
def test_every_full_group_must_hold_the_chunks(tmp_path: Path, monkeypatch) -> None:
    """Two full-attention groups: hy90 (groups [full, full, sliding 15], block 3, one block a
    chunk) with a tier of 24 chunks instead of 1,000. w90r8 (19 tokens, 6 blocks) is admitted
    at step 115 with no hit, all its blocks evicted from the GPU. Its chunks 0-3 were stored in
    groups 0 and 1 at step 25; the tier dropped group 1's chunk 3 at step 93 and group 0's
    chunks 4 and 5 at steps 67 and 65; group 2 never stored chunk 0, so the tier served none.
    Group 0 alone would reach 12 tokens; group 1 stops at 9: blocks 0-2 are `cpu_window`
    (9 tokens), block 3 stays `evicted` (a full group lacks it), blocks 4 and 5 are
    `evicted_both`."""
    first, *rest = (DATA / "offload_hybrid" / "hy90.trace.jsonl").read_text().splitlines(
        keepends=True)
    config = json.loads(first)
    config["config"]["kv_offloading_size_chunks"] = 24
    trace = tmp_path / "hy90_small_tier.trace.jsonl"
    trace.write_text(json.dumps(config) + "\n" + "".join(rest))
    reckoned, lines = _against_the_lookup(trace, tmp_path, monkeypatch)
    assert reckoned["w90r8"] == (0, 9)
    feed = StreamingStats(watch="w90r8")
    for x in lines:
        feed(json.loads(x))
    feed.report()
    assert feed.watched() == [{
        "step": 115, "prompt_tokens": 19, "hit_tokens": 0, "missed_tokens": 19,
        "missed": {"cpu_window": 9, "evicted_both": 6, "evicted": 3, "partial_block": 1},
        "evicted_by": {"w90r7": 6}}]


def _against_the_lookup(trace: Path, tmp_path: Path, monkeypatch) -> tuple[dict, list[bytes]]:
    """Replay ``trace``, checking `FullGroupChunks.reach` against kvcli's lookup at every
    counted admission that missed a full block: ({request: (GPU hit, reach)}, the stream)."""
    last: dict[str, tuple[int, int]] = {}       # per request: its latest lookup
    looked: dict[str, tuple[int, int]] = {}     # the lookup of its first admission
    reckoned: dict[str, tuple[int, int]] = {}
    real_lookup, real_split = HybridConnector._lookup, CpuTierStats.split_misses
    real_alloc = HybridConnector.update_state_after_alloc

    def lookup(self, st):
        got = real_lookup(self, st)
        alike = SimpleNamespace(
            cfg=self.cfg, infos=self.infos, windowed=self.windowed, being_loaded=None,
            mamba_groups=self.mamba_groups, lookup_order=self.lookup_order,
            eagle_groups=self.eagle_groups, tpcs=self.tpcs, mamba_align=self.mamba_align,
            manager=_WindowedAllThere(self.manager, self.windowed))
        last[st.req.request_id] = (st.num_local, st.num_local + hybrid_lookup.lookup(alike, st))
        return got

    def alloc(self, req, ext):
        # (a request whose allocation failed is looked up again: the admitted lookup is the
        # latest before its first allocation)
        if req.request_id not in looked:
            looked[req.request_id] = last[req.request_id]
        return real_alloc(self, req, ext)

    def split(self, ev, hashes, hit, bs, codes):
        if self.window is not None:
            reckoned[ev["req"]] = (ev["hit_tokens"], self.window.reach(ev, hashes, bs))
        return real_split(self, ev, hashes, hit, bs, codes)

    monkeypatch.setattr(HybridConnector, "_lookup", lookup)
    monkeypatch.setattr(HybridConnector, "update_state_after_alloc", alloc)
    monkeypatch.setattr(CpuTierStats, "split_misses", split)
    _, lines, _ = _replay(trace, tmp_path)
    _stats(lines)
    if len(json.loads(lines[0])["groups"]) == 1:      # (om16: one Mamba group, no lookup here)
        assert not reckoned
        return reckoned, lines
    # (every counted admission that missed a full block)
    assert len(reckoned) >= 5
    assert reckoned == {r: looked[r] for r in reckoned}
    return reckoned, lines
