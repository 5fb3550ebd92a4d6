"""Cache mode with a Mamba2 model: each request is a step of its own.

A Mamba2 prefill writes its checkpoint from inside the chunk (the state at 800 of a
1,153-token prompt, blocks of 400); the next request with the same prompt hits it. Before,
cache mode never told the manager a new step began, so that hit was refused as "cached in
this very step" (vLLM's same-step deferral) and requests 2 and 3 were rejected with "no room
in an empty pool" (rejected 2, hit_tokens 0).
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvcli.app import app

GRANITE = (Path(__file__).resolve().parent / "data" / "mamba"
           / "granite-4.0-h-tiny-style.config.json")


def test_cache_mode_hits_the_last_requests_mamba2_checkpoint(tmp_path: Path) -> None:
    line = {"input_length": 1153, "output_length": 4, "block_size": 16,
            "hash_ids": list(range(1, 74))}
    trace = tmp_path / "same.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 1000 * i, **line}) + "\n"
                             for i in range(3)))
    res = CliRunner().invoke(app, ["replay", str(trace), "--mode", "cache", "--model-config",
                                   str(GRANITE), "--gpu-memory-gib", "80", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    # requests 2 and 3 each hit the 800-token checkpoint (the engine mode's answer too)
    assert (out["rejected"], out["hit_tokens"], out["prompt_tokens"]) == (0, 1600, 3459)
