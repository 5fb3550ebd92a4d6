"""The CPU tier over one sliding-window or chunked-local KV cache group and nothing else: the
one-group connector (written for full attention, whose table never holds a null block) crashed
on it with a KeyError in `_unfence`; until it is checked against vLLM it is refused in one
line, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

REFUSED = ("error: option --kv-offloading-size: the CPU tier over a single "
           "sliding-window/chunked-local group is not modelled yet\n")


@pytest.mark.parametrize("group", [{"type": "sliding_window", "sliding_window": 1},
                                   {"type": "chunked_local", "attention_chunk_size": 4}])
def test_a_windowed_group_alone_under_the_tier_is_refused_in_one_line(
        tmp_path: Path, group: dict) -> None:
    path = tmp_path / "c4.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (
        {"config": {"block_size": 2, "num_blocks": 23, "groups": [group],
                    "kv_offloading_size_chunks": 1, "offload_block_size": 8,
                    "offload_prompt_only": False, "async_scheduling": False}},
        {"id": "a", "prompt_token_ids": list(range(1, 15)), "output_length": 4})) + "\n")
    r = CliRunner().invoke(app, ["replay", str(path), "--arrivals", "step"])
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", REFUSED)
