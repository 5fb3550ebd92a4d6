"""The CPU tier under pipeline parallelism over Mamba groups, with a prefix match unit and with
speculative decoding, step for step against vLLM 0.33.

The recorded cases of `data/offload_pp_more/` (README there): the offload_pp oracle (vLLM's
`ParallelConfig(pipeline_parallel_size=N)`, `step_with_batch_queue` at vLLM's depth, one fake
worker a rank aggregated by vLLM's `KVOutputAggregator`) over the Mamba and partial-tail copies
of `sched_offload`, and with the drafts of `offload_spec_more`'s oracle delivered as vLLM does
under sync PP (`oracle_offload_pp_spec.py`). Each is compared as `test_offload_pp` compares its
cases (`test_offload_replay`'s step lines, requests, `offload` totals and vLLM's event batches;
vLLM's store bytes N x one rank's), the drafted ones also drafts per step and spec stats.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of, replay_case
from spec_offload_check import check_spec_offload_case
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay
from kvcore.errors import InputError

DATA = Path(__file__).parent / "data" / "offload_pp_more"
ALL = sorted(DATA.glob("*.trace.jsonl"))
STOPPED = {t for t in ALL if "error" in answer_of(t)[-1]}
RAN = [t for t in ALL if t not in STOPPED]
PLAIN = [t for t in RAN if "num_speculative_tokens" not in config_of(t)]
DRAFTED = [t for t in RAN if t not in PLAIN]


def _ids(traces: list[Path]) -> list[str]:
    return [t.name.split(".")[0] for t in traces]


def _store_bytes(trace: Path, stored: int) -> None:
    # vLLM's counter sums the N ranks' reports; kvcli counts one rank's bytes
    summary = answer_of(trace, "expected")[-1]["summary"]
    assert stored * config_of(trace)["pipeline_parallel_size"] == \
        summary["kv_connector_stats"].get("kv_offload_store_bytes", 0)


@pytest.mark.parametrize("trace", PLAIN, ids=_ids(PLAIN))
def test_mamba_pp_case(trace: Path) -> None:
    asyn = bool(config_of(trace).get("async_scheduling"))
    one_group.test_offload_case(trace, "expected", asyn)
    _store_bytes(trace, replay_case(trace, async_scheduling=asyn)[0].offload["bytes_stored"])


@pytest.mark.parametrize("trace", DRAFTED, ids=_ids(DRAFTED))
def test_drafted_pp_case(trace: Path) -> None:
    """Drafts under PP with the tier, over attention and Mamba groups (the latter checked
    without the tier too: ../sched_spec_pp_mamba/), step for step."""
    asyn = bool(config_of(trace).get("async_scheduling"))
    check_spec_offload_case(trace)
    _store_bytes(trace, replay_case(trace, async_scheduling=asyn)[0].offload["bytes_stored"])


def test_the_cases_cover_the_combinations() -> None:
    cfgs = {t.name.split(".")[0]: config_of(t) for t in RAN}
    hits = {t.name.split(".")[0]: answer_of(t)[-1]["summary"]["offload"]["cpu_hit_tokens"]
            for t in RAN}
    mamba = {n for n, c in cfgs.items() if any(g.get("type") == "mamba"
                                               for g in c.get("groups", ()))}
    unit = {n for n, c in cfgs.items() if "prefix_match_unit" in c}
    drafted = {n for n, c in cfgs.items() if "num_speculative_tokens" in c}
    for kind in (mamba - unit - drafted, unit - drafted, drafted - mamba, drafted & mamba):
        assert {cfgs[n]["pipeline_parallel_size"] for n in kind} >= {2, 4}
        assert {bool(cfgs[n].get("async_scheduling")) for n in kind} == {False, True}
        assert sum(hits[n] > 0 for n in kind) >= 5 or kind == drafted & mamba
    assert {cfgs[n]["prefix_match_unit"] for n in unit} == {8, 16}
    assert {cfgs[n]["spec_method"] for n in drafted} == {"ngram", "eagle", "eagle3", "mtp"}
    # pure Mamba layouts (no full-attention group) and Mamba2's prefill checkpoints
    assert any(all(g["type"] == "mamba" for g in cfgs[n]["groups"]) for n in mamba)
    assert any(g.get("checkpoint") for n in mamba for g in cfgs[n]["groups"])


@pytest.mark.parametrize(("case", "vllm_said", "field", "said"), [
    # a sync load's Mamba state block left out of the align-mode count (../offload_mamba)
    ("ppom9742", "Cannot get 2 free blocks", "config.sync_load_budget_bytes",
     "Cannot get 2 free blocks from the pool"),
    # vLLM's start-up refusal of a unit with one KV cache group, in its words
    ("ppmp9859", "Invalid prefix_match_unit=16", "config.prefix_match_unit",
     ("Invalid prefix_match_unit=16; with a single KV cache group, prefix-cache hits land on "
      "the block size (64)")),
    # the tier's legacy hashes make eagle3 drop a block in a chunked local group: vLLM asserts
    ("ppos9905", "not supported for eagle + chunked local attention",
     "config.kv_offloading_size_chunks", ("a CPU tier keeps vLLM's legacy block hashes, so "
                                          "eagle3 drops its last block in a chunked local "
                                          "attention group")),
    # both: vLLM's start-up pool check comes before the first lookup's assertion
    ("ppos10000", "needs 48 blocks over the 2 groups", "config.num_blocks",
     "needs 48 blocks (24 full_attention + 24 chunked_local) but only 47 are usable"),
])
def test_where_vllm_stops_kvcli_stops(case: str, vllm_said: str, field: str, said: str,
                                      tmp_path: Path) -> None:
    """In one line, exit code 2, no step written."""
    trace = DATA / f"{case}.trace.jsonl"
    assert vllm_said in answer_of(trace)[-1]["error"]
    asyn = bool(config_of(trace).get("async_scheduling"))
    with pytest.raises(InputError) as e:
        replay(str(trace), ReplayOptions(arrivals="step", async_scheduling=asyn))
    assert e.value.field == field and said in e.value.message
    r = CliRunner().invoke(app, ["replay", str(trace), "--arrivals", "step",
                                 *([] if asyn else ["--no-async-scheduling"]),
                                 "--steps", str(tmp_path / "s.jsonl")])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.output and not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize(("model", "pp", "per_block", "per_chunk", "chunks"), [
    # Jamba over 2 stages: rank 0 holds 16 of 32 layers, vLLM's interleaved groups 2 layers
    # each of it, 2 x 327,680 B (the 80-token attention page the Mamba state is padded to)
    ("jamba-v0.1", 2, 655_360, 1_310_720, 52_428),
    # Nemotron-Nano-9B-v2 over 3 stages: rank 0's widest group 2 layers of 5,373,952 B pages
    ("nemotron-nano-9b-v2", 3, 10_747_904, 32_243_712, 2_131),
])
def test_a_mamba_model_sizes_the_chunk_from_rank_0(model: str, pp: int, per_block: int,
                                                    per_chunk: int, chunks: int) -> None:
    """As `test_offload_pp`'s attention models: rank 0's block x every rank, the replay and
    `kvcli config` alike."""
    trace = Path(__file__).parent / "data" / "offload_cases" / "gpu_small_cpu_return.trace.jsonl"
    opts = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 64.0,
            "model": model, "pipeline_parallel_size": pp, "num_blocks": 64,
            "max_model_len": 4096}
    o = replay(str(trace), ReplayOptions(**opts, given=frozenset(opts))).offload
    assert (o["kv_bytes_per_block"], o["kv_bytes_per_chunk"], o["cpu_num_chunks"]) == \
        (per_block, per_chunk, chunks)
    r = CliRunner().invoke(app, ["config", model, "--pp", str(pp), "--gpu-memory-gib", "141",
                                 "--max-model-len", "4096", "--kv-offloading-size", "64",
                                 "--json"])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["stages"][0]["bytes_per_block"] == per_block
    assert (d["cpu_offload"]["kv_bytes_per_chunk"], d["cpu_offload"]["cpu_num_chunks"]) == \
        (per_chunk, chunks)
