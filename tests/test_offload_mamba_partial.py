"""The CPU tier over a real hybrid model's Mamba layout, step for step against vLLM 0.33.

vLLM bumps a Mamba hybrid's block to the Mamba state's page (jamba-v0.1: 80 tokens) for every
group, and its offloading config makes the chunk from that block (`offloading/config.py:
106-160`), not from `--block-size`. `data/offload_mamba_partial/` holds vLLM's answers over such
layouts (blocks of 32-80 tokens, Jamba's seven Mamba groups and a full one among them; README
there): with the hash block the block (no `prefix_match_unit`) kvcli replays them step for step
here; with a finer unit (vLLM's partial tails) in `test_offload_mamba_tails.py`. What vLLM
refuses itself kvcli refuses alike, in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of, replay_case

from kvcore.analysis.events_reader import parse_header
from kvcore.analysis.stats.collector import StatsCollector
from kvcore.engine.events import JsonlEvents
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_mamba_partial"
ALL = sorted(DATA.glob("*.trace.jsonl"), key=lambda t: int(t.name[2:].split(".")[0]))
CASES = [t for t in ALL if "prefix_match_unit" not in config_of(t)]
ROOT = Path(__file__).resolve().parents[1]


def _ids(cases: list[Path]) -> list[str]:
    return [t.name.split(".")[0] for t in cases]


@pytest.mark.parametrize("trace", CASES, ids=_ids(CASES))
def test_bumped_block_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


@pytest.mark.parametrize("trace", CASES, ids=_ids(CASES))
def test_the_chunk_is_the_groups_block(trace: Path) -> None:
    """vLLM's chunk is the group's block (times blocks_per_chunk), the hash block the block:
    no partial tails; every CPU hit is whole chunks."""
    cfg = config_of(trace)
    summary = answer_of(trace)[-1]["summary"]
    eff = summary["config"]["_effective"]
    tpc = cfg.get("offload_block_size") or cfg["block_size"]
    assert eff["tokens_per_chunk"] == eff["mamba"]["mamba_align_size"] == tpc
    assert eff["mamba"]["supports_partial_tail"] is False
    assert all(r["cpu_hit_tokens"] % tpc == 0 for r in summary["requests"])


def test_the_cases_cover_the_layouts() -> None:
    cfgs = [config_of(t) for t in CASES]
    assert {c["block_size"] for c in cfgs} >= {48, 64, 80}
    assert any(len(c["groups"]) == 8 for c in cfgs)                    # Jamba's 7 + 1
    assert any(all(g["type"] == "mamba" for g in c["groups"]) for c in cfgs)
    assert any(c.get("offload_block_size") for c in cfgs)
    assert {bool(c.get("async_scheduling")) for c in cfgs} == {False, True}
    offs = [answer_of(t)[-1]["summary"]["offload"] for t in CASES]
    assert all(o["cpu_hit_tokens"] > 0 for o in offs)
    # mp160: five sync loads of 48-token chunks
    loads = [j for ln in answer_of(DATA / "mp160.trace.jsonl")[:-1] if "step" in ln
             for j in ln["load_jobs"].values()]
    assert [j["sync"] for j in loads] == [True] * 5


def test_a_unit_vllm_refuses_is_refused_alike() -> None:
    """One Mamba group alone: vLLM refuses any unit but the block at start-up
    (`kv_cache_utils.py:845-857`); kvcli says vLLM's words."""
    with pytest.raises(InputError) as e:
        replay_case(DATA / "mp34.refused.jsonl", async_scheduling=False)
    assert "with a single KV cache group, prefix-cache hits land on the block size (80)" in \
        e.value.message


def _cli(*args: str):
    from typer.testing import CliRunner

    from kvcli.app import app

    return CliRunner().invoke(app, ["replay", str(ROOT / "traces" / "multiturn-chat.jsonl"),
                                    "--model", "jamba-v0.1", *args])


def test_jamba_replays_over_the_tier_end_to_end() -> None:
    """`kvcli replay ... --model jamba-v0.1 --kv-offloading-size 0.5`: the chunk is Jamba's
    80-token block (one group's 4 layers x 327,680 bytes), 409 of them in 0.5 GiB; loads hit
    the CPU tier in whole chunks."""
    r = _cli("--num-blocks", "400", "--kv-offloading-size", "0.5", "--json")
    assert r.exit_code == 0, r.output
    off = json.loads(r.stdout)["offload"]
    assert (off["tokens_per_chunk"], off["kv_bytes_per_chunk"], off["cpu_num_chunks"]) == \
        (80, 4 * 327_680, 409)
    assert (off["cpu_hit_tokens"], off["load_jobs"], off["chunks_loaded"]) == (206_320, 147, 3_608)
    assert off["cpu_hit_tokens"] % 80 == 0


def test_an_offload_block_off_the_bumped_block_is_refused() -> None:
    """`offload_block_size` must be a multiple of the group's 80-token block, as vLLM says
    (`offloading/config.py:150-158`), not of `--block-size` 16."""
    trace = ROOT / "tests" / "data" / "sched_cases" / "a_shared_prefix.trace.jsonl"
    kw = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 1.0,
          "model": "jamba-v0.1", "num_blocks": 4096, "offload_block_size": 96}
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions(**kw, given=frozenset(kw)))
    assert e.value.field == "offload_block_size"
    assert "multiple of the block size 80" in e.value.message


@pytest.mark.parametrize(("chunk", "blocks"), [(None, 1), (160, 2)])
def test_stats_reads_the_tier_chunk_in_the_bumped_block(chunk: int | None, blocks: int,
                                                        tmp_path: Path) -> None:
    """`kvcli stats` finds a chunk's key block (the `evicted_both` split) from the stream's
    chunk over the groups' 80-token block: blocks per chunk 2 for 160-token chunks, where it
    divided by the header's `block_size` 16 and took 10 (the key of another chunk)."""
    trace = ROOT / "tests" / "data" / "sched_cases" / "a_shared_prefix.trace.jsonl"
    kw = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 1.0,
          "model": "jamba-v0.1", "num_blocks": 4096, "offload_block_size": chunk}
    ev = tmp_path / "ev.jsonl"
    with open(ev, "wb") as f:
        s = replay(str(trace), ReplayOptions(**kw, given=frozenset(kw)), JsonlEvents(f))
    header = parse_header(ev.read_bytes().splitlines()[0], str(ev))
    assert (header["block_size"], header["groups"][-1]["block_size"]) == (16, 80)
    assert s.offload["tokens_per_chunk"] == 80 * blocks
    assert StatsCollector(header).cpu.bpc == blocks
