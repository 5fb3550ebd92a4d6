"""The order of vLLM 0.33's refusals that kvcli makes at start-up: those vLLM makes when it
builds the Scheduler's KV cache manager (the retention interval's ValueError, the prefix-match
unit's) come before the asserts of its first prefix-cache lookup, and in that lookup the
chunked local attention groups assert in group order (`HybridKVCacheCoordinator.
find_longest_cache_hit` over `verify_and_split_kv_cache_groups`' spec groups; each manager
asserts EAGLE's drop off before its block being the lcm: `ChunkedLocalAttentionManager.
find_longest_cache_hit`). kvcli refused EAGLE's drop in a chunked group first, before all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

BASE = {"block_size": 8, "num_blocks": 60, "max_num_seqs": 2, "max_num_batched_tokens": 100,
        "max_model_len": 256, "long_prefill_token_threshold": 0, "policy": "fcfs",
        "scheduler_reserve_full_isl": True, "enable_prefix_caching": True, "kv_events": False,
        "async_scheduling": False, "num_speculative_tokens": 2, "spec_acceptance_rate": 0.5,
        "spec_seed": 1, "spec_method": "eagle3", "disable_lookahead_block_hashes": True}
FULL32 = {"type": "full", "block_size": 32}
FINE = {"type": "chunked_local", "attention_chunk_size": 32, "block_size": 8}
COARSE = {"type": "chunked_local", "attention_chunk_size": 32, "block_size": 32}
DROP = ("field 'config.disable_lookahead_block_hashes': drops EAGLE's last block in a chunked "
        "local attention group, which vLLM does not support (it fails at the first lookup: "
        "'Hybrid KV cache is not supported for eagle + chunked local attention.'): "
        "flag only the groups holding the draft's layers (eagle_groups), or use lookahead "
        "hashes")
SIZES = ("field 'config.groups': KV cache groups of different block sizes (8, 32 tokens) with "
         "a chunked local attention group of 8 tokens, finer than their lcm (32), fail in vLLM "
         "at its first prefix-cache lookup: 'KV cache groups with different block sizes are not "
         "compatible with chunked local attention now' (they run with prefix caching off)")
RETENTION = ("field 'config.prefix_cache_retention_interval': prefix_cache_retention_interval "
             "24 has no effect: no sliding-window or Mamba KV cache group (set it to 0)")


@pytest.mark.parametrize(("config", "said"), [
    # the finer chunked group (unflagged) is looked up first: its block's assert
    ({"groups": [FULL32, FINE, COARSE], "eagle_groups": [2]}, SIZES),
    # the flagged one first: EAGLE's assert, before the finer group's
    ({"groups": [FULL32, COARSE, FINE], "eagle_groups": [1]}, DROP),
    # the retention interval is refused when the KV cache manager is built, before any lookup
    ({"block_size": 16, "groups": [{"type": "full"},
                                   {"type": "chunked_local", "attention_chunk_size": 32}],
      "prefix_cache_retention_interval": 24}, RETENTION),
])
def test_refused_in_vllms_order(config: dict, said: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.trace.jsonl"
    req = {"id": "a", "prompt_token_ids": list(range(1, 41)), "output_length": 3,
           "arrival_step": 0}
    trace.write_text(json.dumps({"config": {**BASE, **config}}) + "\n" + json.dumps(req) + "\n")
    steps = tmp_path / "steps.jsonl"
    r = CliRunner().invoke(app, ["replay", str(trace), "--steps", str(steps)])
    assert (r.exit_code, r.stdout, steps.exists()) == (2, "", False)
    assert r.stderr.splitlines() == [f"error: {trace}:1: {said}"]
