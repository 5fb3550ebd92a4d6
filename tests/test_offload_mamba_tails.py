"""The CPU tier's partial tails, step for step against vLLM 0.33 (`--prefix-match-unit` finer
than a Mamba block: `kvcore/offload/hybrid_partial.py`).

With a hash block finer than the block and one block a chunk, vLLM's connector stores the state
a producer caches at its last prompt hash boundary inside a block (handed over by the
copy-on-write) under every group's key at that boundary, and looks up boundaries one hash
block apart past the last whole chunk; the scheduler shows it the local hit floored to the
block and drops a local sub-block tail only for a longer tier hit. `data/offload_mamba_partial/`
keeps ten of vLLM's answers over such layouts (README there: all 211 answered unit draws of
seeds 1-300 match); each is replayed and compared line by line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of, replay_case

from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_mamba_partial"
TAILS = sorted((t for t in DATA.glob("*.trace.jsonl") if "prefix_match_unit" in config_of(t)),
               key=lambda t: int(t.name[2:].split(".")[0]))
ROOT = Path(__file__).resolve().parents[1]


def _ids(cases: list[Path]) -> list[str]:
    return [t.name.split(".")[0] for t in cases]


def _lines(trace: Path) -> list[dict]:
    return [ln for ln in answer_of(trace)[:-1] if "step" in ln]


@pytest.mark.parametrize("trace", TAILS, ids=_ids(TAILS))
def test_partial_tail_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


def _tails(trace: Path) -> list[int]:
    """The boundaries of the partial tails vLLM offered (a store offer's "tN")."""
    return [int(k[1:]) for ln in _lines(trace) for offers in ln["store_offers"].values()
            for o in offers for keys in o["chunks"].values() for k in keys if isinstance(k, str)]


def test_the_cases_cover_the_partial_paths() -> None:
    assert len(TAILS) == 13
    cfgs = {t.name.split(".")[0]: config_of(t) for t in TAILS}
    assert {c["prefix_match_unit"] for c in cfgs.values()} == {8, 16}
    assert {bool(c.get("async_scheduling")) for c in cfgs.values()} == {False, True}
    assert cfgs["mp248"]["offload_block_size"] == 2 * cfgs["mp248"]["block_size"]  # no tails
    assert any(g.get("checkpoint") for c in cfgs.values() for g in c["groups"])   # Mamba2
    assert any(c.get("kv_events") for c in cfgs.values())
    for t in TAILS:
        cfg = cfgs[t.name.split(".")[0]]
        facts = answer_of(t)[-1]["summary"]["config"]["_effective"]["mamba"]
        partial = not cfg.get("offload_block_size")
        assert facts["supports_partial_tail"] is partial
        assert facts["tokens_per_hash"] == cfg["prefix_match_unit"]
        tails = _tails(t)
        assert bool(tails) is partial
        assert all(b % cfg["prefix_match_unit"] == 0 and b % cfg["block_size"] for b in tails)
    # a CPU hit ending on a partial tail (inside a block), and a local tail kept (the GPU hit
    # inside a block, nothing loaded past it), each in several cases
    ends = {n: [(g, c) for ln in _lines(t) for g, c in ln["lookups"].values()]
            for n, t in zip(cfgs, TAILS)}
    bs = {n: c["block_size"] for n, c in cfgs.items()}
    assert sum(any(c and (g + c) % bs[n] for g, c in v) for n, v in ends.items()) >= 6
    assert sum(any(g % bs[n] and not c for g, c in v) for n, v in ends.items()) >= 6
    # mp54, mp176: loads of a partial tail inside the step (sync)
    for name, n in (("mp54", 3), ("mp176", 2)):
        loads = [j for ln in _lines(DATA / f"{name}.trace.jsonl")
                 for j in ln["load_jobs"].values() if j["sync"]]
        assert len(loads) == n


def test_mp120_a_partial_tail_stored_then_loaded() -> None:
    """mp120 (full + Mamba2, 32-token blocks, unit 8): p120r0's tail at token 16 is stored in
    step 1 under both groups' keys in one offer (one block each: the full group's block 0, the
    Mamba group's copy-on-write block); in step 7 p120r4 loads those two keys inside the step
    (no GPU hit, 16 CPU tokens: less than a chunk)."""
    trace = DATA / "mp120.trace.jsonl"
    _, ours, _, _ = replay_case(trace, async_scheduling=False)
    key = 11_784_136_117_047_082_254
    for lines in (_lines(trace), ours):
        by_step = {ln["step"]: ln for ln in lines}
        assert by_step[1]["store_offers"]["p120r0"] == [
            {"chunks": {"0": ["t16"], "1": ["t16"]}, "n_absent": 2}]
        assert by_step[1]["store_jobs"]["0"] == {
            "req": "p120r0", "gpu_blocks": 2, "chunks": [0, 1], "group_sizes": [1, 1],
            "keys": [[0, key], [1, key]]}
        assert by_step[7]["lookups"] == {"p120r4": [0, 16]}
        assert by_step[7]["load_jobs"]["4"] == {
            "req": "p120r4", "gpu_blocks": 2, "chunks": [0, 1], "group_sizes": [1, 1],
            "sync": True, "keys": [[0, key], [1, key]]}


def test_a_stall_vllm_meets_is_refused_in_one_line() -> None:
    """mp114 (seven Mamba2 groups and a full one, unit 16): vLLM waits for ever for a request
    the pool never has room for (its GPU side: the same without the tier); kvcli stops at that
    request in one line."""
    with pytest.raises(InputError) as e:
        replay_case(DATA / "mp114.fails.jsonl", async_scheduling=False)
    assert e.value.field == "num_blocks" and "'p114r3' can never be admitted" in e.value.message
    assert "\n" not in str(e.value)


def _cli(*args: str):
    from typer.testing import CliRunner

    from kvcli.app import app

    return CliRunner().invoke(app, ["replay", str(ROOT / "traces" / "multiturn-chat.jsonl"),
                                    "--model", "jamba-v0.1", *args])


def test_jamba_with_a_finer_unit_replays_over_the_tier() -> None:
    """`kvcli replay traces/multiturn-chat.jsonl --model jamba-v0.1 --num-blocks 400
    --kv-offloading-size 0.5 --prefix-match-unit 16`: 80-token chunks keyed every 5 hashes,
    partial tails stored and loaded (CPU hits end off the 80-token grid)."""
    r = _cli("--num-blocks", "400", "--kv-offloading-size", "0.5", "--prefix-match-unit", "16",
             "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    off = d["offload"]
    assert (off["tokens_per_chunk"], off["cpu_num_chunks"]) == (80, 409)
    assert (d["hit_tokens"], off["gpu_hit_tokens"], off["cpu_hit_tokens"]) == \
        (196_944, 215_088, 243_856)
    assert (off["load_jobs"], off["chunks_loaded"], off["store_jobs"], off["chunks_stored"],
            off["store_offers"], off["cpu_evictions"], off["flushed_jobs"],
            off["lookup_deferrals"], off["alloc_failures"]) == \
        (173, 4_278, 2_763, 8_112, 3_712, 7_703, 150, 5_344, 0)
    assert off["connector_prefix_cache_stats"] == {
        "requests": 294, "queries": 477_681, "hits": 132_800, "preempted_requests": 62,
        "preempted_queries": 130_896, "preempted_hits": 111_056,
        "hits_by_source": {"host": 132_800}}
    assert off["cpu_hit_tokens"] % 80 and off["cpu_hit_tokens"] % 16 == 0
    # the least sync load is a partial tail of one hash block: 16 x 131,072 bytes
    r = _cli("--num-blocks", "400", "--kv-offloading-size", "0.5", "--prefix-match-unit", "16",
             "--offload-sync-load-budget-bytes", "2097151", "--json")
    assert [w for w in json.loads(r.stdout)["warnings"] if w.startswith("option sync")] == [
        ("option sync_load_budget_bytes has no effect: 2,097,151 bytes is less than the least "
         "load, a partial tail of 16 tokens (2,097,152 bytes): every load stays asynchronous")]
