"""The KV cache layout a DeepSeek-V4 gets decides its planning (tests/data/deepseek_v4/
layouts.json, record_layouts.py: vLLM 0.33 on 1 GiB): only the C4 layers' indexer backend
declares the block-outermost layout, so tiny-dsv4-var (a C4 layer) is packed as Flash is,
and tiny-dsv4-var2 (none) gets vLLM's default, layer-outer, whose page unification refuses
its MLA pages. kvcli packed var2 too (a pool vLLM never starts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

DATA = Path(__file__).parent / "data" / "deepseek_v4"
CASES = json.loads((DATA / "layouts.json").read_text())["cases"]


def _config(name: str, *args: str):
    return CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{name}.config.json"),
                                    "--max-model-len", "4096", "--gpu-memory-gib", "1",
                                    "--gpu-memory-utilization", "1", "--weights-gib", "0", *args])


def test_with_a_c4_layer_the_pool_is_packed_as_vllm_plans_it() -> None:
    """var: 22,459 blocks of 47,808 bytes in six groups (its three windows' groups of one
    layer each, 52,596 tokens)."""
    plan = CASES["tiny-dsv4-var"]["planning"]
    assert plan["layout"] == "BLHNC"
    r = _config("tiny-dsv4-var", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["kv_cache_layout"] == "block_outermost"
    assert [(g["num_layers"], g["block_size"], g["page_size_bytes"]) for g in d["groups"]] == [
        (len(g["layers"]), g["block_size"], g["page_size_bytes"]) for g in plan["groups"]]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["bytes_per_block"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], plan["tensors"][0]["block_stride"])
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)


def test_without_one_vllm_refuses_and_so_does_kvcli() -> None:
    words = " ".join(CASES["tiny-dsv4-var2"]["planning"]["refused"])
    assert words.startswith("NotImplementedError: Layer model.layers.0.attn: page size is not")
    r = _config("tiny-dsv4-var2")
    assert (r.exit_code, r.output) == (2, "error: option --model-config: vLLM 0.33 refuses to "
                                          "start: \"" + words.split(": ", 1)[1] + "\"\n")
