"""The defaults kvcli takes for a hybrid Mamba model = what vLLM 0.33's start-up derives.

tests/data/mamba/start_defaults.json was recorded from the real vLLM 0.33.0 on the CPU
(tests/data/mamba/record_start_defaults.py: `VllmConfig` with its MambaModelConfig hook,
`Platform._align_hybrid_block_size` with FlashAttention, the layer class's `get_kv_cache_spec`,
`get_kv_cache_groups`, `resolve_kv_cache_block_sizes`, `partial_hash_hits_enabled`), for
`jamba-v0.1` (Mamba1) and a Granite-4.0-H style config.json (Mamba2, `MambaMixer2`), prefix
caching on, max_model_len 8192. Before this test kvcli gave a Mamba2 group no prefill
checkpoint block: 2 blocks per request where vLLM reserves 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.engine.mamba_split import align_block_size, checkpoint_alignment
from kvcore.kv_cache_manager import KVCacheManager
from kvcore.sizing import blocks_per_request, resolve_kv_cache_config
from kvcore.specs import MambaSpec

DATA = Path(__file__).resolve().parent / "data" / "mamba"
CASES = json.loads((DATA / "start_defaults.json").read_text())["cases"]
SOURCES = {"jamba-v0.1": {"model": "jamba-v0.1"},
           "granite-4.0-h-tiny-style": {
               "model_config": str(DATA / "granite-4.0-h-tiny-style.config.json")},
           "nemotron-nano-9b-v2": {
               "model_config": str(DATA / "nemotron-nano-9b-v2.config.json")},
           "falcon-h1-7b": {"model_config": str(DATA / "falcon-h1-7b.config.json")}}


@pytest.mark.parametrize("want", CASES, ids=lambda c: c["name"])
def test_kvcli_takes_vllms_start_up_defaults(want: dict) -> None:
    r = resolve_kv_cache_config(**SOURCES[want["name"]], max_model_len=8192, num_blocks=1000)
    groups = r.config.kv_cache_groups
    assert [{"kind": "mamba" if isinstance(g.kv_cache_spec, MambaSpec) else "full",
             "block_size": g.kv_cache_spec.block_size, "num_layers": len(g.layer_names)}
            for g in groups] == want["groups"]
    mamba = next(g.kv_cache_spec for g in groups if isinstance(g.kv_cache_spec, MambaSpec))
    attn = next(g.kv_cache_spec for g in groups if not isinstance(g.kv_cache_spec, MambaSpec))
    ws = want["mamba_spec"]
    assert (attn.block_size, mamba.block_size) == (want["block_size"], want["mamba_block_size"])
    assert (mamba.page_size_bytes, mamba.real_page_size_bytes, attn.page_size_bytes) == (
        want["mamba_page_size_padded"], want["mamba_page_size_real"],
        want["attention_page_size"])
    assert (mamba.num_speculative_blocks, mamba.num_prefill_checkpoint_blocks,
            mamba.prefill_checkpoint_alignment, blocks_per_request(mamba, r.ctx)) == (
        ws["num_speculative_blocks"], ws["num_prefill_checkpoint_blocks"],
        ws["prefill_checkpoint_alignment"], ws["max_memory_usage_pages"])
    assert r.ctx.mamba_cache_mode == ws["mamba_cache_mode"] == "align"
    kvm = KVCacheManager(r.config, 8192, enable_caching=True)
    assert (kvm.scheduler_block_size, kvm.hash_block_size) == (
        want["scheduler_block_size"], want["hash_block_size"])
    # no partial-block hits (hash block = Mamba block), so no shared-prefix checkpoints either
    assert want["partial_hash_hits"] is False
    assert kvm.hash_block_size == mamba.block_size
    # the scheduler clips prefills to the Mamba block, and (Mamba2) checkpoints inside a chunk
    assert align_block_size(kvm) == want["mamba_block_size"]
    assert checkpoint_alignment(kvm) == (ws["prefill_checkpoint_alignment"] or 0)


def test_the_recorded_answers_are_the_four_layouts() -> None:
    """What vLLM derived, spelled out: Jamba's attention block is raised to 80 (a Mamba1 state,
    311296 B, padded to 5 x 16 tokens x 4096 B), Granite's to 400, Nemotron Nano 9B v2's to
    1,312 (27 Mamba2 layers in 7 groups beside its 4 attention layers; its 25 feed-forward
    layers keep nothing), Falcon-H1 7B's to 1,568 (attention and Mamba2 in every layer: 44
    of each, two groups); only Mamba2 reserves a third block per request for its prefill
    checkpoint."""
    got = {c["name"]: (c["block_size"], c["mamba_page_size_padded"],
                       c["mamba_spec"]["num_prefill_checkpoint_blocks"],
                       c["mamba_spec"]["max_memory_usage_pages"], c["hash_block_size"])
           for c in CASES}
    assert got == {"jamba-v0.1": (80, 327680, 0, 2, 80),
                   "granite-4.0-h-tiny-style": (400, 819200, 1, 3, 400),
                   "nemotron-nano-9b-v2": (1312, 5373952, 1, 3, 1312),
                   "falcon-h1-7b": (1568, 1605632, 1, 3, 1568)}
