"""The CPU tier under pipeline parallelism, step for step against vLLM 0.33.

The recorded cases of `data/offload_pp/` (README there; DESIGN.md says what vLLM does): the
oracle's `sched_offload` (hybrid copy) with `ParallelConfig(pipeline_parallel_size=N)`, driven
by `EngineCore.step_with_batch_queue` at vLLM's depth (N, N + 1 async) and one fake worker a
rank, their reports combined by vLLM's own `KVOutputAggregator`. Each is replayed with
`--arrivals step` in the mode its config line names and compared as `test_offload_replay`
compares one group (steps, requests, the `offload` totals, vLLM's event batches), plus the
chunk's size: a chunk holds every rank's copy (rank 0's block x N).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_pp"
ALL = sorted(DATA.glob("*.trace.jsonl"))
REFUSED = DATA / "pphy9602.trace.jsonl"
CASES = [t for t in ALL if t != REFUSED]


@pytest.mark.parametrize("trace", CASES, ids=[t.name.split(".")[0] for t in CASES])
def test_pp_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))
    cfg = config_of(trace)
    summary = answer_of(trace, "expected")[-1]["summary"]
    s = replay(str(trace), ReplayOptions(arrivals="step",
                                         async_scheduling=bool(cfg.get("async_scheduling"))))
    eff = summary["config"]["_effective"]
    assert (s.offload["kv_bytes_per_chunk"], s.offload["cpu_num_chunks"]) == \
        (eff["kv_bytes_per_chunk"], eff["cpu_num_chunks"])
    # vLLM's counters sum the N ranks' reports; kvcli counts one rank's bytes
    assert s.offload["bytes_stored"] * cfg["pipeline_parallel_size"] == \
        summary["kv_connector_stats"].get("kv_offload_store_bytes", 0)


def test_the_cases_cover_pipelines() -> None:
    cfgs = [config_of(t) for t in CASES]
    offload = [answer_of(t, "expected")[-1]["summary"]["offload"] for t in CASES]
    assert {c["pipeline_parallel_size"] for c in cfgs} == {2, 3, 4}
    assert {bool(c.get("async_scheduling")) for c in cfgs} == {False, True}
    assert any("groups" in c for c in cfgs) and any("groups" not in c for c in cfgs)
    assert any("kv_offloading_size" in c for c in cfgs)       # GiB: the chunk's size counts
    assert sum(o["cpu_hit_tokens"] for o in offload) > 0
    assert all(sum(o[k] for o in offload) for k in ("lookup_deferrals", "flushed_jobs",
                                                    "cpu_evictions", "alloc_failures"))


def test_vllms_start_up_refusal_is_kvclis(tmp_path: Path) -> None:
    """vLLM refuses to start (a max_model_len request needs 33 blocks, its sliding group's with
    the in-flight tokens of a queue of 3 batches; the pool has 31): kvcli refuses alike, one
    line, exit code 2, no step written."""
    assert "needs 33 blocks" in answer_of(REFUSED, "expected")[0]["error"]
    with pytest.raises(InputError, match="33"):
        replay(str(REFUSED), ReplayOptions(arrivals="step", async_scheduling=False))
    r = CliRunner().invoke(app, ["replay", str(REFUSED), "--arrivals", "step",
                                 "--steps", str(tmp_path / "s.jsonl")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # (the command's default is async scheduling: PP + 1 batches in flight)
    assert "33 blocks" in r.stderr and r.stderr.strip().endswith(
        "(pipeline parallelism 3 with async scheduling: 4 batches in flight)")
    assert "Traceback" not in r.output and not (tmp_path / "s.jsonl").exists()


RANK_0 = pytest.mark.parametrize(("model", "tp", "pp", "per_block", "per_chunk", "chunks"), [
    # Llama-3.1-8B over 3 stages: rank 0 holds 11 of 32 layers (vLLM's split 11, 11, 10),
    # 11 x 65,536 B a block, x 3 ranks a chunk
    ("llama-3.1-8b", 1, 3, 720_896, 2_162_688, 31_775),
    # over 5 stages (6, 6, 7, 7, 6 layers): rank 0's 6 layers, not the 7 of the stages that fit
    # the fewest blocks (the pool's bytes per block)
    ("llama-3.1-8b", 1, 5, 393_216, 1_966_080, 34_952),
    # DeepSeek-V3 at TP 8 over 2 stages: 31 of 61 layers x 18,432 B, and no replicated latent
    # with pipeline stages: 16 copies
    ("deepseek-v3", 8, 2, 571_392, 9_142_272, 7_516),
])


@RANK_0
def test_a_model_sizes_the_chunk_from_rank_0(model: str, tp: int, pp: int, per_block: int,
                                              per_chunk: int, chunks: int) -> None:
    trace = Path(__file__).parent / "data" / "offload_cases" / "gpu_small_cpu_return.trace.jsonl"
    opts = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 64.0,
            "model": model, "tp": tp, "pipeline_parallel_size": pp, "num_blocks": 64,
            "max_model_len": 512}
    o = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts))).offload
    assert (o["kv_bytes_per_block"], o["kv_bytes_per_chunk"], o["cpu_num_chunks"]) == \
        (per_block, per_chunk, chunks)
    assert o["bytes_loaded"] == o["chunks_loaded"] * per_block > 0


@RANK_0
def test_kvcli_config_sizes_the_tier_as_the_replay_does(model: str, tp: int, pp: int,
                                                         per_block: int, per_chunk: int,
                                                         chunks: int) -> None:
    """Rank 0's block (stage 0's layers, not the stage with the fewest blocks) x every rank."""
    r = CliRunner().invoke(app, ["config", model, "--tp", str(tp), "--pp", str(pp),
                                 "--gpu-memory-gib", "141", "--max-model-len", "512",
                                 "--kv-offloading-size", "64", "--json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["stages"][0]["bytes_per_block"] == per_block
    tier = d["cpu_offload"]
    assert (tier["kv_bytes_per_chunk"], tier["cpu_num_chunks"]) == (per_chunk, chunks)


@pytest.mark.parametrize(("flags", "key", "value"), [
    # (pposeed9520's answer holds 88 CPU hit tokens; ngram's drafts change the run)
    (["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 2}',
      "--spec-acceptance-rate", "0.5"], ("spec_decode", "num_drafts"), 167),
    (["--prefix-match-unit", "4"], ("offload", "cpu_hit_tokens"), 88),    # the block: a no-op
    # Jamba's 80-token block: 2 ranks x stage 0's 2 layers a group x 327,680 B
    (["--model", "jamba-v0.1", "--num-blocks", "400"], ("offload", "kv_bytes_per_chunk"),
     1_310_720),
])
def test_what_was_refused_with_the_tier_runs(flags: list[str], key: tuple[str, str],
                                             value: int) -> None:
    """The tier with PP and drafts, a Mamba model's groups or a prefix match unit was refused
    until `data/offload_pp_more/` checked it against vLLM: each runs now."""
    trace = DATA / "pposeed9520.trace.jsonl"
    r = CliRunner().invoke(app, ["replay", str(trace), "--arrivals", "step", "--json", *flags])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)[key[0]][key[1]] == value
