"""The sync-load budget's bytes per token over a model's KV cache groups, as vLLM 0.33 charges it.

vLLM's `_reserve_sync_load` charges a hit `num_hit_tokens x kv_bytes_per_token`, where
`kv_bytes_per_token` sums every offloaded group's block bytes over its tokens
(`offloading/scheduler.py:326-330`: page x layers // tokens_per_block, per group). A chunk's
bytes in the tier are one aliased block id's instead (`offloading/config.py:175-185`). kvcli
charged the chunk's rate: right for one group, half of vLLM's for gpt-oss-20b (a full and a
sliding group of 12 layers), an eighth for jamba-v0.1 (seven Mamba groups and a full one, each
4 layers of 327,680-byte pages in 80-token blocks), so budgets vLLM keeps asynchronous loaded
inside the step.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvcore.engine.options import ReplayOptions, resolve
from kvcore.engine.startup import start_up
from kvcore.traces.reader import read_trace

ROOT = Path(__file__).resolve().parents[1]
MT = ROOT / "traces" / "multiturn-chat.jsonl"


def _tier(model: str, **kw):
    trace = read_trace(str(MT), keep=4)
    opts = ReplayOptions(model=model, num_blocks=400, kv_offloading_size=0.5, **kw)
    return start_up(trace, resolve(opts, trace.config, path=str(MT))).offload


@pytest.mark.parametrize(("model", "block", "per_block", "per_token", "chunks"), [
    # one group: the chunk's rate is vLLM's (32 layers x 32 KiB pages of 16 tokens)
    ("llama-3.1-8b", 16, 2_097_152, 131_072, 256),
    # two groups of 12 layers x 32,768 B: 2 x 393,216 // 16 (the chunk is one of them)
    ("gpt-oss-20b", 16, 393_216, 49_152, 1_365),
    # eight groups of 4 layers x 327,680 B in 80-token blocks: 8 x 1,310,720 // 80
    ("jamba-v0.1", 80, 1_310_720, 131_072, 409),
])
def test_bytes_per_token_sum_the_groups(model, block, per_block, per_token, chunks) -> None:
    cfg = _tier(model)
    assert (cfg.block_size, cfg.kv_bytes_per_block, cfg.kv_bytes_per_token) == \
        (block, per_block, per_token)
    # the tier's size stays one aliased block id a chunk (not the sum): 0.5 GiB over it
    assert (cfg.kv_bytes_per_chunk, cfg.num_chunks) == (per_block, chunks)


def _replay(*args: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "kvcli", "replay", str(MT), "--model", "jamba-v0.1",
                        "--num-blocks", "400", "--kv-offloading-size", "0.5", "--json", *args],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def test_jamba_budget_under_one_chunk_loads_nothing_inside_the_step(tmp_path) -> None:
    # the least load is one 80-token chunk: 80 x 131,072 = 10,485,760 bytes (kvcli said
    # 1,310,720 and took 5 loads of this trace into the step at 5,000,000 bytes)
    steps = tmp_path / "steps.jsonl"
    short = _replay("--offload-sync-load-budget-bytes", "5000000", "--steps", str(steps))
    assert [w for w in short["warnings"] if w.startswith("option sync")] == [
        ("option sync_load_budget_bytes has no effect: 5,000,000 bytes is less than the least "
         "load, one chunk of 80 tokens (10,485,760 bytes): every load stays asynchronous")]
    lines = [json.loads(line) for line in steps.open()]
    assert sum(j["sync"] for e in lines for j in e.get("load_jobs", {}).values()) == 0
    o = short["offload"]
    # 3,608 GPU blocks loaded: a state of each of the 7 Mamba groups a load (1,245,184 bytes:
    # their layers unpadded), the other 2,579 full attention (1,310,720)
    assert (o["load_jobs"], o["cpu_hit_tokens"], o["gpu_blocks_loaded"], o["bytes_loaded"]) == \
        (147, 206_320, 3_608, 147 * 7 * 1_245_184 + 2_579 * 1_310_720) == \
        (147, 206_320, 3_608, 4_661_641_216)
    # a budget of 100,000,000 bytes holds hits of up to 762 tokens: 14 loads inside the step
    wide = _replay("--offload-sync-load-budget-bytes", "100000000", "--steps", str(steps))
    lines = [json.loads(line) for line in steps.open()]
    assert sum(j["sync"] for e in lines for j in e.get("load_jobs", {}).values()) == 14
    assert not [w for w in wide["warnings"] if w.startswith("option sync")]
