"""The CPU tier under tensor parallelism and for an MLA model, as vLLM 0.33's `CPUOffloadingSpec`
sizes it: `--kv-offloading-size` is the engine's, a chunk holds every rank's share of its blocks
(x TP), except an MLA latent, which every rank holds whole and vLLM keeps once (its replicated
layout). `kvcli config` and `kvcli replay` size it alike, and an MLA replay is the full-attention
replay of the same pool and chunks (the connector treats an MLA group as full attention)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.options import ReplayOptions
from kvcore.engine.replay import replay

DATA = Path(__file__).parent / "data"
TRACE = DATA / "offload_cases" / "gpu_small_cpu_return.trace.jsonl"


@pytest.mark.parametrize(("model", "tp", "per_block", "per_chunk", "chunks"), [
    # DeepSeek-V3: 61 layers x 18,432 B (latent 576 x 16 x 2 B), one copy, 4 KiB pages
    ("deepseek-v3", 8, 1_124_352, 1_126_400, 61_008),
    # Llama-3.1-70B at TP 4: 80 layers x 2 x 16 x 2 heads x 128 x 2 B a rank, x 4 ranks
    ("llama-3.1-70b", 4, 1_310_720, 5_242_880, 13_107),
])
def test_replay_and_config_size_the_tier_alike(model: str, tp: int, per_block: int,
                                                per_chunk: int, chunks: int) -> None:
    opts = {"arrivals": "step", "async_scheduling": False, "kv_offloading_size": 64.0,
            "model": model, "tp": tp, "num_blocks": 64, "max_model_len": 512}
    s = replay(str(TRACE), ReplayOptions(**opts, given=frozenset(opts)))
    o = s.offload
    assert (o["kv_bytes_per_block"], o["kv_bytes_per_chunk"], o["cpu_num_chunks"]) == \
        (per_block, per_chunk, chunks)
    r = CliRunner().invoke(app, ["config", model, "--tp", str(tp), "--gpu-memory-gib", "141",
                                 "--kv-offloading-size", "64", "--block-size", "16", "--json"])
    assert r.exit_code == 0, r.output
    tier = json.loads(r.stdout)["cpu_offload"]
    assert (tier["kv_bytes_per_chunk"], tier["cpu_num_chunks"]) == (per_chunk, chunks)


@pytest.mark.parametrize("case", ["cpu_full_lru", "offload_block_4x", "preempt_offload"])
def test_an_mla_replay_is_the_full_attention_replay_of_its_pool(case: str) -> None:
    """DeepSeek-V3 at TP 8 with a recorded case's pool and tier (its config line gives both in
    blocks and chunks): the same steps, hits, loads, stores and evictions as the case's
    full-attention geometry (which the oracle's answer pins); only the bytes differ."""
    trace = str(DATA / "offload_cases" / f"{case}.trace.jsonl")
    base = {"arrivals": "step", "async_scheduling": False}
    full = replay(trace, ReplayOptions(**base, given=frozenset(base)))
    mla_opts = {**base, "model": "deepseek-v3", "tp": 8}
    mla = replay(trace, ReplayOptions(**mla_opts, given=frozenset(mla_opts)))
    sizes = {"kv_bytes_per_block", "kv_bytes_per_chunk", "copy_bytes_per_block", "bytes_loaded",
             "bytes_stored", "kv_offloading_size_gib"}
    assert full.offload["chunks_loaded"] > 0      # (cpu_full_lru evicts from the tier too)
    assert {k: v for k, v in mla.offload.items() if k not in sizes} == \
        {k: v for k, v in full.offload.items() if k not in sizes}
    assert (mla.hit_tokens, mla.finished, mla.steps) == (full.hit_tokens, full.finished,
                                                         full.steps)
    # the bytes a rank moves: DeepSeek-V3's 1,124,352 a block against Llama-3-8B's 2 MiB
    assert mla.offload["bytes_loaded"] * (2 << 20) == full.offload["bytes_loaded"] * 1_124_352


def test_config_sizes_a_mamba_hybrids_cpu_tier_at_its_own_block_size() -> None:
    """Nemotron-Nano's groups run at 1,312 tokens a block: vLLM's CPU tier counts chunks of
    that block (799 of 21,495,808 bytes: 1,048,288 token slots at 16 GiB, TP 4); kvcli said 799
    chunks of 16 tokens, took an offload block of 1,312 as 82 blocks a chunk and accepted 32.
    vLLM's `cpu_kv_cache_size_tokens` counts requests of max_model_len (131,072): each needs
    100 chunks of the full group and one of each of the 7 Mamba groups, 799 x 131,072 // 107 =
    978,752 (kvcli said the slots)."""
    args = ["config", "nemotron-nano-9b-v2", "--gpu-memory-gib", "141", "--tp", "4",
            "--kv-offloading-size", "16", "--json"]
    for extra in ([], ["--kv-offloading-block-size", "1312"]):
        r = CliRunner().invoke(app, args + extra)
        assert r.exit_code == 0, r.output
        tier = json.loads(r.stdout)["cpu_offload"]
        assert (tier["blocks_per_chunk"], tier["tokens_per_chunk"], tier["cpu_num_chunks"],
                tier["kv_bytes_per_chunk"], tier["cpu_token_slots"],
                tier["cpu_kv_cache_size_tokens"]) == (1, 1312, 799, 21_495_808, 1_048_288,
                                                      978_752)
    r = CliRunner().invoke(app, args + ["--kv-offloading-block-size", "32"])
    assert r.exit_code == 2 and "must be a multiple of the block size 1312" in r.stderr
