"""The CPU tier over KV cache groups of several block sizes against vLLM 0.33.

`data/offload_mixed/` holds traces whose config line's `groups` have their own `block_size`s and
the answers of vLLM's real Scheduler + OffloadingConnector (the oracle's `sched_offload`
patched by `patch_oracle_mixed.py`; README there). Each group's chunk is one of its own blocks,
keyed by every (its block / the hash block)-th hash; each run is replayed in the scheduling
mode its config line names and compared as `test_offload_mamba` compares its cases. Those with
`offload_block_size` (vLLM's `kv_connector_extra_config` "block_size", a chunk in tokens) are
vLLM's AssertionError at start-up, and kvcli refuses them in the same words, naming the config
line's key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_offload_replay as one_group
from oracle_sched import answer_of, config_of
from typer.testing import CliRunner

from kvcli.app import app

DATA = Path(__file__).parent / "data" / "offload_mixed"
ASSERTED = sorted(t for t in DATA.glob("*.trace.jsonl")
                  if "offload_block_size" in json.loads(t.read_text().split("\n", 1)[0])["config"])
RAN = sorted((t for t in DATA.glob("*.trace.jsonl") if t not in ASSERTED),
             key=lambda t: t.name)
VLLM_WORDS = ("If 'block_size' is specified in kv_connector_extra_config, there must be at "
              "least one KV cache group, and all groups must have the same block size.")


@pytest.mark.parametrize("trace", ASSERTED, ids=[t.name.split(".")[0] for t in ASSERTED])
def test_a_chunk_in_tokens_over_several_block_sizes_is_refused_as_vllm_asserts(
        trace: Path) -> None:
    answer = json.loads(trace.with_name(trace.name.replace(".trace.", ".expected."))
                        .read_text().splitlines()[-1])
    assert answer == {"error": f"AssertionError: {VLLM_WORDS}"}
    cfg = json.loads(trace.read_text().split("\n", 1)[0])["config"]
    sizes = sorted({g.get("block_size", cfg["block_size"]) for g in cfg["groups"]
                    if g["type"] != "mamba"} | ({cfg["block_size"]} if any(
                        g["type"] == "mamba" for g in cfg["groups"]) else set()))
    mode = [] if cfg.get("async_scheduling") else ["--no-async-scheduling"]
    r = CliRunner().invoke(app, ["replay", str(trace), *mode])
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.strip().splitlines() == [
        (f"error: {trace}:1: field 'config.offload_block_size': over KV cache groups of several "
         f"block sizes ({', '.join(map(str, sizes))} tokens) vLLM 0.33 fails to start: "
         f'"{VLLM_WORDS}"')]


def test_the_kept_cases_hold_both_layouts() -> None:
    """ox12: full attention groups of 16 and 32 tokens; ox38: a sliding window of 4-token
    blocks beside full attention and two Mamba groups of 8."""
    assert [t.name for t in ASSERTED] == ["ox12.trace.jsonl", "ox38.trace.jsonl"]


@pytest.mark.parametrize("trace", RAN, ids=[t.name.split(".")[0] for t in RAN])
def test_mixed_case(trace: Path) -> None:
    one_group.test_offload_case(trace, "expected", bool(config_of(trace).get("async_scheduling")))


def test_the_run_cases_cover_the_layouts() -> None:
    """Groups of two and three sizes, Mamba and sliding windows beside them, both schedulers,
    both policies, dense and interval retention, preemptions and CPU hits; each connector
    keyed every group by its own chunk (the answers' `_effective.mixed`)."""
    seen = set()
    for t in RAN:
        cfg = config_of(t)
        summary = answer_of(t)[-1]["summary"]
        facts = summary["config"]["_effective"]["mixed"]
        sizes = [g.get("block_size", cfg["block_size"]) for g in cfg["groups"]]
        assert facts["tokens_per_chunk"] == sizes
        assert facts["hashes_per_chunk"] == [n // min(sizes) for n in sizes]
        seen |= {f"sizes{len(set(sizes))}", cfg["eviction_policy"],
                 "async" if cfg.get("async_scheduling") else "sync",
                 f"retention {cfg.get('prefix_cache_retention_interval', 0) is None}"}
        seen |= {g["type"] for g in cfg["groups"]}
        if any(r["num_preemptions"] for r in summary["requests"]):
            seen.add("preempted")
        if summary["offload"]["cpu_hit_tokens"]:
            seen.add("cpu hit")
    assert seen == {"sizes2", "sizes3", "lru", "arc", "async", "sync", "retention True",
                    "retention False", "full", "sliding_window", "mamba", "preempted",
                    "cpu hit"}
