"""`--kv-cache-dtype fp8_ds_mla` named, and the block size `kvcli script` sizes a sparse MLA
model at, against vLLM 0.33.0 (tests/data/sparse_mla/ds_mla_dense.json, variants.json).

Before: kvcli's value table refused fp8_ds_mla by name; vLLM's FLASHMLA_SPARSE lists it beside
fp8 (the same 656-byte layout), and no dense backend an H100 has lists it ("No valid attention
backend found"). `kvcli config --json` said kv_cache_dtype "fp8" where vLLM stores fp8_ds_mla.
`kvcli script` read a script's block_size 16 as unset (a sparse model ran at 64) and crashed on
a sparse model's one uniform-type group.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app

DATA = Path(__file__).resolve().parent / "data" / "sparse_mla"
DENSE = json.loads((DATA / "ds_mla_dense.json").read_text())
TINY = DATA.parent / "sched_sparse_mla" / "deepseek-v3.2-tiny.json"
NO_BACKEND = ("16: vLLM 0.33 finds no attention backend for a sparse MLA model (DeepSeek-V3.2's "
              "indexer) at this block size; its sparse backends take a multiple of 64 (leave the "
              "block size unset for 64)")


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_vllm_serves_it_on_sparse_layers_only() -> None:
    """The recording: a sparse MLA layer's fp8_ds_mla picks FLASHMLA_SPARSE, as fp8 does; a
    plain decoder layer and a dense MLA one find no backend (every Hopper backend's reasons
    name the dtype, or a library this CPU lacks whose static list lacks it too)."""
    by = {(c["layer"], c["kv_cache_dtype"]): c for c in DENSE}
    assert by[("sparse_mla", "fp8_ds_mla")]["valid"] == by[("sparse_mla", "fp8")]["valid"] \
        == ["FLASHMLA_SPARSE"]
    assert by[("decoder", "fp8_ds_mla")]["valid"] == by[("dense_mla", "fp8_ds_mla")]["valid"] \
        == []
    assert by[("decoder", "fp8_ds_mla")]["invalid"]["TRITON_ATTN"] == \
        by[("dense_mla", "fp8_ds_mla")]["invalid"]["TRITON_MLA"] == ["kv_cache_dtype not supported"]


@pytest.mark.parametrize("kv_cache_dtype, stored, per_block", [
    ("auto", "bfloat16", 4 * (8_448 + 73_728)),
    ("bfloat16", "bfloat16", 4 * (8_448 + 73_728)),
    ("fp8", "fp8_ds_mla", 4 * (8_448 + 41_984)),
    ("fp8_ds_mla", "fp8_ds_mla", 4 * (8_448 + 41_984)),
    ("fp8_e4m3", "fp8_e4m3", 4 * (8_448 + 36_864)),
])
def test_config_reports_the_stored_dtype(kv_cache_dtype: str, stored: str,
                                         per_block: int) -> None:
    """`kvcli config --json`'s kv_cache_dtype is the latent's layout vLLM stores (it said fp8
    for fp8_ds_mla); fp8_ds_mla named sizes as fp8 does."""
    r = _run("config", "--model-config", str(TINY), "--num-blocks", "100", "--kv-cache-dtype",
             kv_cache_dtype, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["kv_cache_dtype"], out["bytes_per_block"]) == (stored, per_block)


@pytest.mark.parametrize("model, kind", [("llama-3.1-8b", "attention"), ("deepseek-v3", "MLA")])
def test_refused_beside_other_models(model: str, kind: str) -> None:
    r = _run("config", model, "--num-blocks", "100", "--kv-cache-dtype", "fp8_ds_mla")
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [(
        f"error: option --kv-cache-dtype: 'fp8_ds_mla' with {model}: vLLM 0.33 finds no {kind} "
        "backend for it on Hopper; fp8_ds_mla is the sparse MLA backends' layout "
        "(DeepSeek-V3.2, GLM-5); use fp8")]


def test_replay_takes_it(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"id": "r0", "prompt_token_ids": list(range(70)),
                                 "output_length": 3}) + "\n")
    r = _run("replay", str(trace), "--model-config", str(TINY), "--num-blocks", "10",
             "--kv-cache-dtype", "fp8_ds_mla", "--json")
    assert r.exit_code == 0, r.output


def _script(tmp_path: Path, config: dict) -> str:
    p = tmp_path / "ops.jsonl"
    p.write_text(json.dumps({"config": config}) + "\n" + json.dumps(
        {"op": "new", "id": "a", "prompt": list(range(1, 71))}) + "\n")
    return str(p)


@pytest.mark.parametrize("config, flag, error, block", [
    ({"block_size": 16}, (), "{script}:1: field 'config.block_size': " + NO_BACKEND, None),
    ({}, ("--block-size", "16"), "option --block-size: " + NO_BACKEND, None),
    ({}, (), None, 64),
    ({"block_size": 16}, ("--block-size", "128"), None, 128),
])
def test_script_tells_a_given_16_from_the_default(config, flag, error, block,
                                                  tmp_path: Path) -> None:
    """`kvcli script` as `kvcli config`: a given 16 (the script's or the flag's) refused where
    it was given; unset, the model's group at 64 (70 tokens: 2 blocks)."""
    ops = _script(tmp_path, config)
    r = _run("script", ops, "--model-config", str(TINY), "--num-blocks", "10", *flag)
    if error is not None:
        assert r.exit_code == 2
        assert r.output.strip().splitlines() == [f"error: {error.format(script=ops)}"]
        return
    assert r.exit_code == 0, r.output
    new = json.loads(r.stdout.splitlines()[0])
    assert new["new_block_ids"] == ([[1, 2]] if block == 64 else [[1]])


def test_script_keeps_a_dense_models_16(tmp_path: Path) -> None:
    ops = _script(tmp_path, {"block_size": 16})
    r = _run("script", ops, "--model", "llama-3.1-8b", "--num-blocks", "10",
             "--max-model-len", "1024")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.splitlines()[0])["new_block_ids"] == [[1, 2, 3, 4, 5]]


def test_clock_explain_refuses_it_beside_a_dense_model() -> None:
    r = _run("clock", "explain", "--model", "llama-3.1-8b", "--gpu", "h100", "--case",
             "decode=8*1@1024", "--kv-cache-dtype", "fp8_ds_mla")
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1].startswith(
        "error: option --kv-cache-dtype: 'fp8_ds_mla' with llama-3.1-8b: vLLM 0.33 finds no "
        "attention backend")
