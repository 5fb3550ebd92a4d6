"""The mutation fuzzer (`stream_mutants.py`) over small streams of each layout kvcli writes: one
KV cache group (engine and cache mode), a hybrid with a sliding window, groups of two block
sizes none at the hash block (the `chain_*` lists, salted), a CPU tier over three groups, EAGLE
drafts. Each mutant changes one field of one line (or cuts, doubles or swaps a line): `kvcli
stats` gives the original's report or refuses it naming the file, the line and the field.
Fixed seeds, a bounded number of mutants a stream."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from stream_mutants import failures
from typer.testing import CliRunner

from kvcli.app import app

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
P = list(range(1, 201))
B = P[:150] + list(range(1001, 1031))


def _mixed_trace(path: Path) -> str:
    """Groups of 32 and 48 tokens hashed at 16, salted: `admit` carries the chain."""
    cfg = {"block_size": 16, "num_blocks": 40, "max_model_len": 256, "max_num_seqs": 2,
           "max_num_batched_tokens": 256,
           "groups": [{"type": "full", "block_size": 32}, {"type": "full", "block_size": 48}]}
    reqs = [{"id": "a", "prompt_token_ids": P, "output_length": 2, "arrival_step": 0,
             "cache_salt": "s"},
            {"id": "b", "prompt_token_ids": B, "output_length": 2, "arrival_step": 10,
             "cache_salt": "s"},
            {"id": "c", "prompt_token_ids": B[:100], "output_length": 3, "arrival_step": 12}]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [{"config": cfg}, *reqs]))
    return str(path)


def _head(path: Path, n: int) -> str:
    lines = (ROOT / "traces" / "shared-prefix.jsonl").read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:n]))
    return str(path)


LAYOUTS = {
    "one_group": lambda d: [_head(d / "sp.jsonl", 12), "--num-blocks", "120"],
    "cache_mode": lambda d: [_head(d / "sp.jsonl", 12), "--num-blocks", "120", "--mode",
                             "cache"],
    "sliding_window": lambda d: [str(DATA / "sched_cases_hybrid" / "a_full_swa_skip.trace.jsonl"),
                                 "--arrivals", "step"],
    "mixed_block_sizes": lambda d: [_mixed_trace(d / "mixed.jsonl"), "--arrivals", "step"],
    "cpu_tier": lambda d: [str(DATA / "offload_hybrid" / "hy12.trace.jsonl"), "--arrivals",
                           "step"],
    "eagle_drafts": lambda d: [str(DATA / "sched_spec_eagle" / "aseed90106.trace.jsonl"),
                               "--arrivals", "step"],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_mutant_gives_the_same_report_or_names_its_line_and_field(layout, tmp_path):
    stream = tmp_path / f"{layout}.events.jsonl"
    r = CliRunner().invoke(app, ["replay", *LAYOUTS[layout](tmp_path), "--events", str(stream)])
    assert r.exit_code == 0, r.output
    found = list(failures(stream, tmp_path, seed=20261206, per_line=3, n_lines=30))
    assert found == []
