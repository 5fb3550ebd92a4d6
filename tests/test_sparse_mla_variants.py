"""Sparse MLA (DeepSeek-V3.2, GLM-5) beyond the bf16 default, against vLLM 0.33.0's own specs,
backend checks and planning (tests/data/sparse_mla/variants.json, record_sparse_variants.py).

Before, kvcli refused an fp8 cache and IndexCache configs, and sized an explicit --block-size 16
at 64 as if it were the default. vLLM: fp8 is FLASHMLA_SPARSE's fp8_ds_mla (656 bytes a token:
DeepSeek-V3.2 10,403 blocks in 52.1 GB become 16,951), fp8_e4m3 FLASHINFER_MLA_SPARSE_SM90's
plain fp8 (576), fp8_e5m2 and any explicit block size but a multiple of 64 no backend at all,
and IndexCache's skipping layers keep no indexer cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models import layer_specs, load_hf_config, read_hf_config
from kvcore.sizing import get_kv_cache_groups, kv_cache_config_from_groups
from kvcore.sizing.config import capacity, vllm_tensor_count
from kvcore.specs import SizingContext

DATA = Path(__file__).resolve().parent / "data" / "sparse_mla"
VARIANTS = json.loads((DATA / "variants.json").read_text())
# (every cache dtype the recorded checks cover; fp8_ds_mla named is fp8's layout)
MODELLED = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla")
# (reasons this CPU gives that an H100 does not: no FlashAttention MLA kernel here, and no
# FlashInfer; vLLM 0.33 pins a FlashInfer with the SM90 MLA feature)
MACHINE = ("FlashAttention MLA not supported on this device",
           "FLASHINFER_MLA_SPARSE_SM90 requires FlashInfer with SM90 MLA support")


def geometry(case: dict):
    cfg = load_hf_config(DATA / f"{case['config']}.config.json") | case["overrides"]
    return read_hf_config(cfg, source=f"{case['config']}.config.json")


def kvcli_dtype(vllm_dtype: str, cache: str | None, kv_cache_dtype: str) -> str:
    """kvcli's spec dtype for vLLM's: an fp8 latent is stored as uint8 there."""
    if vllm_dtype != "uint8" or cache is None:
        return vllm_dtype
    return "fp8" if kv_cache_dtype in ("fp8", "fp8_ds_mla") else kv_cache_dtype


def case_id(case: dict) -> str:
    return "-".join([case["config"], *map(str, case["overrides"].values()),
                     case["kv_cache_dtype"], str(case["max_model_len"])])


@pytest.mark.parametrize("case", [c for c in VARIANTS["cases"]
                                  if c["kv_cache_dtype"] in MODELLED], ids=case_id)
def test_specs_and_planning_as_vllm(case: dict) -> None:
    g = geometry(case)
    specs = layer_specs(g, max_model_len=case["max_model_len"],
                        kv_cache_dtype=case["kv_cache_dtype"])
    ours = [(type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
             s.cache_dtype_str, s.page_size_bytes, s.index_group_leader)
            for s in specs.values()]
    assert ours == [(*s[1:5], kvcli_dtype(s[5], s[6], case["kv_cache_dtype"]), *s[6:8], s[9])
                    for s in case["specs"]]
    groups = get_kv_cache_groups(specs)
    config = kv_cache_config_from_groups(groups, case["available"])
    ctx = SizingContext(max_model_len=case["max_model_len"], max_num_batched_tokens=8192,
                        max_concurrent_batches=2)
    cap = capacity(config, ctx, case["available"], case["max_model_len"])
    assert [(len(gr.layer_names), type(gr.kv_cache_spec).__name__, gr.kv_cache_spec.block_size,
             gr.kv_cache_spec.page_size_bytes) for gr in groups] \
        == [(gr["num_layers"], gr["spec"], gr["block_size"], gr["page_size_bytes"])
            for gr in case["groups"]]
    assert vllm_tensor_count(groups) == case["num_tensors"]
    assert (config.num_blocks, cap.max_concurrency, cap.kv_cache_tokens,
            cap.max_model_len_fits) == (case["num_blocks"], case["max_concurrency"],
                                        case["kv_cache_tokens"], case["max_model_len_fits"])


def test_the_recorded_numbers() -> None:
    """DeepSeek-V3.2 in fp8 on the bf16 case's 52.1 GB: 16,951 blocks of 61 x (41,984 +
    8,448) bytes (bf16: 10,403); fp8_e4m3 pages of 36,864 + 8,448; IndexCache every 2 layers:
    31 indexer caches of 61."""
    by = {case_id(c): c for c in VARIANTS["cases"]}
    fp8 = by["deepseek-v3.2-fp8-163840"]
    assert (fp8["cache_dtype_after"], fp8["groups"][0]["page_size_bytes"], fp8["num_blocks"]) \
        == ("fp8_ds_mla", 61 * (41_984 + 8_448), 16_951)
    assert by["deepseek-v3.2-fp8_e4m3-32768"]["groups"][0]["page_size_bytes"] \
        == 61 * (36_864 + 8_448)
    named = by["deepseek-v3.2-fp8_ds_mla-32768"]
    assert [s[1:] for s in named["specs"]] == [s[1:] for s in fp8["specs"]]
    freq = by["deepseek-v3.2-2-auto-163840"]
    assert (freq["groups"][0]["num_layers"], freq["num_tensors"]) == (61 + 31, 3)


def _vllm_pick(kv_cache_dtype: str, block_size: int | None) -> dict | None:
    """The first SM90 sparse backend (CudaPlatform's order) whose checks pass on an H100."""
    for check in VARIANTS["backends"]["checks"]:
        if (check["kv_cache_dtype"], check["block_size"]) == (kv_cache_dtype, block_size) \
                and not [r for r in check["reasons"] if not r.startswith(MACHINE)]:
            return check
    return None


@pytest.mark.parametrize("block_size", [None, 16, 32, 64, 128])
@pytest.mark.parametrize("kv_cache_dtype", MODELLED)
def test_served_where_vllm_finds_a_backend(kv_cache_dtype: str, block_size: int | None) -> None:
    """kvcli serves exactly the (cache dtype, explicit block size) pairs an H100's sparse
    backends take, at the cache dtype the picked one runs (fp8 as fp8_ds_mla)."""
    g = read_hf_config(load_hf_config(DATA / "deepseek-v3.2.config.json"))
    pick = _vllm_pick(kv_cache_dtype, block_size)
    if pick is None:
        with pytest.raises(InputError) as e:
            layer_specs(g, block_size=block_size, kv_cache_dtype=kv_cache_dtype)
        assert e.value.field in ("block_size", "kv_cache_dtype") and "\n" not in str(e.value)
        return
    specs = layer_specs(g, block_size=block_size, kv_cache_dtype=kv_cache_dtype)
    latent = specs["layers.0"]
    assert latent.cache_dtype_str == pick["cache_dtype"]
    # (the indexer's backend takes [64]: a larger multiple runs it in kernel blocks of 64)
    assert latent.block_size == (block_size or 64) and \
        VARIANTS["backends"]["indexer_kernel_block_sizes"] == ["64"]


TINY = DATA.parent / "sched_sparse_mla" / "deepseek-v3.2-tiny.json"
NO_BACKEND = ("16: vLLM 0.33 finds no attention backend for a sparse MLA model (DeepSeek-V3.2's "
              "indexer) at this block size; its sparse backends take a multiple of 64 (leave the "
              "block size unset for 64)")


def _run(*args: str):
    from typer.testing import CliRunner

    from kvcli.app import app
    return CliRunner().invoke(app, list(args))


def test_config_tells_a_given_16_from_the_default() -> None:
    """`kvcli config`: no --block-size sizes at 64 (as before), --block-size 16 is refused in
    one line (it was sized at 64 too), 128 is kept; a dense model's given 16 stays 16."""
    sized = _run("config", "--model-config", str(TINY), "--num-blocks", "100", "--json")
    assert sized.exit_code == 0 and json.loads(sized.stdout)["groups"][0]["block_size"] == 64
    refused = _run("config", "--model-config", str(TINY), "--num-blocks", "100",
                   "--block-size", "16")
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines() == [f"error: option --block-size: {NO_BACKEND}"]
    kept = _run("config", "--model-config", str(TINY), "--num-blocks", "100", "--block-size",
                "128", "--json")
    assert json.loads(kept.stdout)["groups"][0]["block_size"] == 128
    dense = _run("config", "llama-3.1-8b", "--num-blocks", "100", "--block-size", "16",
                 "--max-model-len", "1024", "--json")
    assert json.loads(dense.stdout)["groups"][0]["block_size"] == 16


@pytest.mark.parametrize("line, flag, error", [
    ({"block_size": 16}, (), f"{{trace}}:1: field 'config.block_size': {NO_BACKEND}"),
    ({}, ("--block-size", "16"), f"option --block-size: {NO_BACKEND}"),
    ({}, (), None),
    ({"block_size": 64}, (), None),
])
def test_replay_tells_a_given_16_from_the_default(line, flag, error, tmp_path: Path) -> None:
    """A trace's config line or the flag giving 16 is refused where it was given; unset, the
    replay runs the model's group at 64."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"config": {"num_blocks": 10, **line}}) + "\n" + json.dumps(
        {"id": "r0", "prompt_token_ids": [1, 2, 3, 4, 5], "output_length": 3}) + "\n")
    r = _run("replay", str(trace), "--model-config", str(TINY), *flag, "--json")
    if error is None:
        assert r.exit_code == 0, r.output
        return
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"error: {error.format(trace=trace)}"]
