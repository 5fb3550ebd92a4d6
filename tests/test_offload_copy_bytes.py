"""The CPU tier's transfer bytes as vLLM 0.33's worker counts them: a job moves each group's GPU
blocks at that group's own layers' unpadded pages (`v1/kv_offload/cpu/gpu_worker.py:424-446`,
`offloading/worker.py:121-129`), summed over the job and reported when it finishes, loads and
stores alike. kvcli counted every block at the widest group's block id (jamba-v0.1: 1,310,720).

Each model's bytes a block are worked out here by hand (layers x page, the page from the
model's geometry); the replay's step lines give each finished job's blocks a group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

TRACE = Path(__file__).resolve().parents[1] / "traces" / "multiturn-chat.jsonl"


def attention_page(block: int, kv_heads: int, head_dim: int) -> int:
    """K and V, bfloat16."""
    return 2 * block * kv_heads * head_dim * 2


# jamba-v0.1's Mamba (v1) state a layer: conv (d_conv 4 - 1) x intermediate (2 x 4,096) and
# ssm intermediate x d_state 16, bfloat16: 49,152 + 262,144 = 311,296 (vLLM pads the page to
# the attention page, 327,680, and copies the 311,296)
JAMBA_MAMBA = 3 * 8192 * 2 + 8192 * 16 * 2
# (model, --num-blocks, --kv-offloading-size, groups' kinds, bytes a block of each group,
#  bytes loaded, bytes stored)
CASES = [
    # one group: 32 layers of 65,536 (unchanged: 2,097,152 a block)
    ("llama-3.1-8b", 600, 1, ["full_attention"], [32 * attention_page(16, 8, 128)],
     161_480_704, 1_883_242_496),
    # two groups of 12 layers of 32,768: 393,216 each (unchanged: no padding, equal layers)
    ("gpt-oss-20b", 600, 0.25, ["sliding_window", "full_attention"], [12 * attention_page(16, 8, 64)] * 2,
     69_206_016, 479_723_520),
    # seven Mamba groups of 4 layers (1,245,184 a block) and a full one of 4 (1,310,720)
    ("jamba-v0.1", 400, 0.5, ["mamba"] * 7 + ["full_attention"],
     [4 * JAMBA_MAMBA] * 7 + [4 * attention_page(80, 8, 128)], 59_768_832, 576_258_048),
    # six sliding groups of 9, 9, 9, 9, 8 and 8 layers, a full one of 10, pages of 131,072
    ("gemma-3-27b", 3000, 4, ["sliding_window"] * 6 + ["full_attention"],
     [n * attention_page(16, 16, 128) for n in (9, 9, 9, 9, 8, 8, 10)],
     780_140_544, 7_800_094_720),
]


def _replay(tmp_path: Path, model: str, blocks: int, gib: float) -> tuple[dict, list[dict]]:
    trace = tmp_path / "chat.jsonl"
    trace.write_text("".join(TRACE.read_text().splitlines(keepends=True)[:40]))
    steps = tmp_path / "steps.jsonl"
    r = CliRunner().invoke(app, ["replay", str(trace), "--model", model, "--num-blocks",
                                 str(blocks), "--kv-offloading-size", str(gib), "--steps",
                                 str(steps), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), [json.loads(line) for line in steps.open()]


@pytest.mark.parametrize(("model", "blocks", "gib", "kinds", "per_block", "loaded", "stored"),
                         CASES, ids=[c[0] for c in CASES])
def test_a_job_moves_each_groups_blocks_at_that_groups_bytes(
        tmp_path: Path, model: str, blocks: int, gib: float, kinds: list[str],
        per_block: list[int], loaded: int, stored: int) -> None:
    s, lines = _replay(tmp_path, model, blocks, gib)
    assert [g["type"] for g in s["groups"]] == kinds
    off = s["offload"]
    assert off["copy_bytes_per_block"] == per_block
    jobs: dict[str, dict] = {}
    done = {"load": [], "store": []}
    for e in lines:
        jobs.update(e.get("load_jobs", {}))
        jobs.update(e.get("store_jobs", {}))
        done["load"] += e.get("load_done", [])
        done["store"] += e.get("store_done", [])

    def moved(jid: int) -> int:
        job = jobs[str(jid)]
        sizes = job.get("group_sizes", [job["gpu_blocks"]])
        assert sum(sizes) == job["gpu_blocks"]
        return sum(n * b for n, b in zip(sizes, per_block, strict=True))

    want = {k: sum(moved(j) for j in ids) for k, ids in done.items()}
    assert off["jobs_in_flight_end"] == 0 and len(done["load"]) == off["load_jobs"] > 0
    assert (off["bytes_loaded"], off["bytes_stored"]) == (want["load"], want["store"]) == \
        (loaded, stored)
    if len(set(per_block)) > 1:
        # the widest block for every block: what kvcli counted before
        assert loaded < off["gpu_blocks_loaded"] * off["kv_bytes_per_block"]
        assert stored < off["gpu_blocks_stored"] * off["kv_bytes_per_block"]


def test_jamba_loads_a_mamba_state_a_group_and_the_full_groups_blocks(tmp_path: Path) -> None:
    """The loads' bytes split by hand: every load copies one state of each Mamba group
    (1,245,184) and its full-attention blocks (1,310,720 each)."""
    s, lines = _replay(tmp_path, "jamba-v0.1", 400, 0.5)
    loads = [j for e in lines for j in e.get("load_jobs", {}).values()]
    assert [j["group_sizes"][:7] for j in loads] == [[1] * 7] * len(loads)
    full = sum(j["group_sizes"][7] for j in loads)
    assert (len(loads), full) == (4, 19)
    assert s["offload"]["bytes_loaded"] == 4 * 7 * 1_245_184 + 19 * 1_310_720 == 59_768_832
