"""DeepSeek-V4 (vLLM 0.33's DeepseekV4ForCausalLM) sized as vLLM sizes it on an H100: every
cache's spec, the block-outermost groups and their pool block, and each recorded memory's
KVCacheConfig figures, against tests/data/deepseek_v4/answers.json (vLLM's own build and
planning). Before: kvcli refused the architecture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.group_specs import kind_of
from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.config import group_bytes_per_block
from kvcore.sizing.grouping import get_kv_cache_groups, unpaddable_page_words
from kvcore.sizing.packing import approximate_gcd

DATA = Path(__file__).parent / "data" / "deepseek_v4"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
CONFIGS = ("tiny-dsv4", "deepseek-v4-flash")
MANAGERS = {"sliding_window": "SlidingWindowManager", "mla": "FullAttentionManager"}
GiB = 1 << 30


def _geometry(name: str, arch: str | None = None) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    if arch is not None:
        cfg["architectures"] = [arch]
    return read_hf_config(cfg, source=f"{name}.json")


def _config(name: str, *args: str) -> Any:
    r = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{name}.config.json"),
                                 "--max-model-len", str(CASES[name]["max_model_len"]), *args])
    return r


def _sized(name: str, available: int, *args: str) -> dict[str, Any]:
    r = _config(name, "--gpu-memory-gib", repr(available / GiB), "--gpu-memory-utilization",
                "1", "--weights-gib", "0", "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_cache_spec_is_vllms(name: str) -> None:
    """The specs vLLM's runner collects, in its order (vLLM's names less "model."): per layer
    the indexer's keys and states (C4), the 128-token window, the compressed latent and its
    compressor's states, each page rounded up to 576 bytes."""
    specs = layer_specs(_geometry(name))
    recorded = CASES[name]["specs"]
    assert ["model." + n for n in specs] == [s["name"] for s in recorded]
    for r in recorded:
        s: Any = specs[r["name"].removeprefix("model.")]
        alignment = r["block_stride_alignment"]     # ("MultipleOf(256)" or "None")
        assert (type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
                s.tokens_per_state, getattr(s, "sliding_window", None), s.alignment,
                s.state_content_bytes, s.cache_dtype_str, s.model_version,
                s.block_stride_alignment, s.real_page_size_bytes, s.page_size_bytes) == (
            r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
            r["tokens_per_state"], r["sliding_window"], r["alignment"],
            r["state_content_bytes"], r["cache_dtype_str"], r["model_version"],
            None if alignment == "None" else int(alignment[len("MultipleOf("):-1]),
            r["real_page_size_bytes"], r["page_size_bytes"]), r["name"]


@pytest.mark.parametrize("name", CONFIGS)
def test_block_outermost_groups_are_vllms(name: str) -> None:
    """_get_packed_kv_cache_groups: swa caches split every other layer into two groups,
    the compressed caches of mixed pages in one, each compressor's states in one."""
    groups = get_kv_cache_groups(layer_specs(_geometry(name)), block_outermost=True)
    for plan in CASES[name]["planning"]:
        if "refused" in plan:
            continue
        assert [(["model." + n for n in g.layer_names], g.kv_cache_spec.block_size,
                 group_bytes_per_block(g), MANAGERS[kind_of(g.kv_cache_spec)])
                for g in groups] == [
            (r["layers"], r["block_size"], r["page_size_bytes"], m)
            for r, m in zip(plan["groups"], plan["managers"], strict=True)]


def test_flash_splits_where_approximate_gcd_says() -> None:
    """Flash's balanced buckets hold 43, 23 and 20 layers a page, the floor 20 (the ratio-4
    states' two pages): 23 pads least (3 + 0 + 3), so the 43 swa caches make 2 groups."""
    assert approximate_gcd([43, 23, 20], 20) == 23
    assert approximate_gcd([2, 1, 2], 2) == 2       # (tiny: the swa caches split in two)
    assert approximate_gcd([4, 4], 4) == 4
    assert approximate_gcd([3], 5) == 5             # (a floor above every count: the floor)


def test_a_layer_outer_planner_would_unify_pages_instead() -> None:
    """Without the block-outermost layout the same specs take the page-unifying path, which
    cannot raise a 37,440-byte page to 32,832 nor pad an MLA page (what vLLM's layer-outer
    planner would face), in vLLM's words."""
    with pytest.raises(ValueError, match=(
            r"^Layer layers\.0\.attn: page size is not divisible by the maximum page size and "
            r"cannot be padded\. Padding is only supported for non-MLA attention layers\.$")):
        get_kv_cache_groups(layer_specs(_geometry("tiny-dsv4")))


def test_one_place_words_the_unpaddable_page() -> None:
    """The planner's refusal and the CLI's for a DeepSeek-V4 without a C4 layer (vLLM's layer
    name under "model.") are worded by `unpaddable_page_words` alone."""
    words = unpaddable_page_words("model.layers.0.attn")
    assert words == ("Layer model.layers.0.attn: page size is not divisible by the maximum page "
                     "size and cannot be padded. Padding is only supported for non-MLA "
                     "attention layers.")
    r = CliRunner().invoke(app, ["config", "--model-config",
                                 str(DATA / "tiny-dsv4-var2.config.json"), "--gpu-memory-gib", "1"])
    assert r.output == f"error: option --model-config: vLLM 0.33 refuses to start: \"{words}\"\n"


@pytest.mark.parametrize(("name", "index"), [(n, i) for n in CONFIGS
                                             for i, p in enumerate(CASES[n]["planning"])
                                             if "refused" not in p])
def test_kvcli_config_sizes_as_vllm_planned(name: str, index: int) -> None:
    """Flash: 20 GiB -> 22,338 blocks of 961,344 bytes, 5,786 a request at 1M tokens,
    4,048,235 tokens; 60 GiB -> 67,015. Tiny at 4,096: 1 GiB -> 11,436, 3 GiB -> 34,309."""
    plan = CASES[name]["planning"][index]
    d = _sized(name, plan["available"])
    assert d["kv_cache_dtype"] == CASES[name]["cache_dtype"] == "fp8_ds_mla"
    assert d["kv_cache_layout"] == "block_outermost"
    assert d["memory"]["available_kv_cache_bytes"] == plan["available"]
    assert d["bytes_per_block"] == {t["block_stride"] for t in plan["tensors"]}.pop()
    assert (d["num_blocks"], d["kv_cache_tokens"], d["num_tensors"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], len(plan["tensors"]))
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    assert [g["page_size_bytes"] for g in d["groups"]] == [
        g["page_size_bytes"] for g in plan["groups"]]
    pm = d["prefix_match"]
    assert (pm["scheduler_block_size"], pm["hash_block_size"], d["block_size"],
            pm["cache_hit_alignment_tokens"]) == (
        plan["scheduler_block_size"], plan["hash_block_size"], plan["engine_block_size"],
        plan["cache_hit_alignment_tokens"])


def test_flash_numbers() -> None:
    d = _sized("deepseek-v4-flash", 20 * GiB)
    assert [(g["block_size"], g["num_layers"], g["page_size_bytes"], g["blocks_per_request"])
            for g in d["groups"]] == [(64, 22, 823680, 67), (64, 21, 786240, 67),
                                      (256, 63, 961344, 4096), (8, 23, 755136, 529),
                                      (4, 40, 829440, 1027)]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["max_model_len"]) == (
        22338, 4048235, 1048576)


def test_the_capacity_line_is_vllms_log_line() -> None:
    """vLLM logs "GPU KV cache size: 4,048,235 tokens, Maximum concurrency for 1,048,576 tokens
    per request: 3.86x" at 20 GiB (`update_kv_cache_capacity`); kvcli's line said "pool =
    89,348 token slots" beside it, 22,337 usable blocks x the ratio-4 states' 4 tokens."""
    plan = CASES["deepseek-v4-flash"]["planning"][0]
    r = _config("deepseek-v4-flash", "--gpu-memory-gib", "20", "--gpu-memory-utilization",
                "1", "--weights-gib", "0")
    assert r.exit_code == 0, r.output
    assert (f"KV cache capacity = {plan['kv_cache_tokens']:,} tokens (vLLM logs 'GPU KV cache "
            f"size: {plan['kv_cache_tokens']:,} tokens, Maximum concurrency for 1,048,576 "
            f"tokens per request: {plan['max_concurrency']:.2f}x'); pool = 22,337 usable "
            "blocks, each holding 64/64/256/8/4 tokens of groups 0-4") in r.output
    assert "3.86x" in r.output and "4,048,235 tokens" in r.output
    d = _sized("deepseek-v4-flash", 20 * GiB)
    assert (d["pool_tokens"], d["pool_tokens_by_group"]) == (
        89_348, [1_429_568, 1_429_568, 5_718_272, 178_696, 89_348])


def test_too_little_memory_is_refused_with_vllms_numbers() -> None:
    """vLLM at 64 MiB: "(0.15 GiB KV cache is needed, which is larger than the available KV
    cache memory (0.06 GiB). ... the estimated maximum model length is 1728"."""
    plan = CASES["tiny-dsv4"]["planning"][0]
    assert plan["available"] == 64 << 20
    words = " ".join(plan["refused"])
    assert "(0.15 GiB KV cache is" in words and "(0.06 GiB)" in words and " 1728. " in words
    r = _config("tiny-dsv4", "--gpu-memory-gib", "0.0625", "--gpu-memory-utilization", "1",
                "--weights-gib", "0")
    assert r.exit_code == 2
    assert r.output == (
        "error: option --max-model-len: one request at max_model_len 4096 needs 0.15 GiB "
        "(1684 blocks) of KV cache, available 0.06 GiB (713 blocks) (short by 0.08 GiB); the "
        "largest max_model_len that fits is 1728\n")


def test_sized_on_80_gib_with_its_estimated_weights() -> None:
    """No --weights-gib: each rank's weights and buffers as vLLM builds them (recorded bytes,
    `tests/test_deepseek_v4_weights.py`; the buffers with the top-k scratch at kvcli's
    max_num_batched_tokens) subtracted from 80 GiB x 0.92. Flash fits from TP 8."""
    r = _config("deepseek-v4-flash", "--gpu-memory-gib", "80")
    assert (r.exit_code, r.output) == (2, (
        "error: option --gpu-memory-gib: no memory left for the KV cache: 80 GiB x 0.92 = "
        "73.60 GiB, weights 529.67 GiB (estimated), buffers 260.00 MiB; short by 456.33 GiB\n"))
    d = json.loads(_config("deepseek-v4-flash", "--gpu-memory-gib", "80",
                           "--tensor-parallel-size", "8", "--json").stdout)
    rank = CASES["deepseek-v4-flash"]["tp"]["8"][0]
    scratch = d["max_num_batched_tokens"] * 512 * 4     # (int32 top-k indices, index_topk 512)
    buffers = sum(rank["buffer_bytes_by_dtype"].values()) + scratch
    assert d["memory"]["buffers_bytes"] == buffers == 272_629_760
    available = int(80 * GiB * 0.92) - sum(rank["param_bytes_by_dtype"].values()) - buffers
    assert d["memory"]["available_kv_cache_bytes"] == available == 6_139_161_354
    assert (d["num_blocks"], d["bytes_per_block"]) == (available // 961_344, 961_344)
    assert d["num_blocks"] == 6386
    d = json.loads(_config("tiny-dsv4", "--num-blocks", "2000", "--json").stdout)
    assert (d["num_blocks"], d["bytes_per_block"]) == (2000, 93888)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_every_tensor_parallel_rank_holds_the_same_caches(tp: int) -> None:
    """One head, max_tp_shards 1: the specs do not split; --weights-gib is divided over the
    ranks, so 0 leaves each the same pool."""
    g = _geometry("deepseek-v4-flash")
    assert layer_specs(g, tp=tp) == layer_specs(g)
    d = _sized("deepseek-v4-flash", 20 * GiB, "--tensor-parallel-size", str(tp))
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (22338, 4048235)


DTYPES = json.loads((DATA / "kv_cache_dtypes.json").read_text())   # (vLLM's, record_dtypes.py)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_each_cache_dtype_as_vllm_took_it(dtype: str) -> None:
    """auto and every fp8 run as fp8_ds_mla (the same pages); bfloat16 is refused by the
    layer's fp8_ds_mla layout, float16 by VllmConfig beside a bfloat16 model: vLLM's words."""
    vllm = DTYPES[dtype]
    r = _config("tiny-dsv4", "--gpu-memory-gib", "1", "--gpu-memory-utilization", "1",
                "--weights-gib", "0", "--kv-cache-dtype", dtype, "--json")
    if "refused" in vllm:
        words = vllm["refused"].removeprefix("ValueError: ").split("Value error, ")[-1]
        assert r.exit_code == 2
        assert len(r.output.splitlines()) == 1
        assert words.split(" [type=")[0] in r.output
        return
    d = json.loads(r.stdout)
    assert (d["kv_cache_dtype"], d["num_blocks"]) == (vllm["cache_dtype"], 11436)
    pages = {n.removeprefix("model."): p for n, p in vllm["pages"].items()}
    assert {n: s.page_size_bytes for n, s in layer_specs(
        _geometry("tiny-dsv4"), kv_cache_dtype=dtype).items()} == pages


@pytest.mark.parametrize(("option", "value"), [("--block-size", "64")])
def test_unrecorded_settings_are_refused_in_one_line(option: str, value: str) -> None:
    """(--pipeline-parallel-size was refused here too until recorded: test_deepseek_v4_pp)"""
    r = _config("tiny-dsv4", "--gpu-memory-gib", "1", "--weights-gib", "0", option, value)
    assert r.exit_code == 2
    assert r.output.startswith(f"error: option {option}: {value}: kvcli ")
    assert len(r.output.splitlines()) == 1


@pytest.mark.parametrize("arch", ["DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration",
                                  None])
def test_the_config_is_read_whatever_its_class(arch: str | None) -> None:
    """Before: both classes, and a config naming none by its model_type, were refused."""
    g = _geometry("tiny-dsv4", arch)
    assert g.v4 is not None
    assert (g.layer_kinds, g.v4.compress_ratios, g.sliding_window) == (
        ("dsv4",) * 4, (128, 4, 1, 4), 128)


def test_a_compress_ratio_vllm_has_no_kernel_for_is_refused() -> None:
    cfg = json.loads((DATA / "tiny-dsv4.config.json").read_text())
    cfg["compress_rates"]["compressed_sparse_attention"] = 16
    with pytest.raises(InputError) as e:
        read_hf_config(cfg, source="dsv4.json")
    assert e.value.field == "compress_rates"
    assert e.value.message.startswith("'compressed_sparse_attention': compress ratio 16; ")


def test_the_clock_refuses_it_in_one_line() -> None:
    """Before: refused by architecture; since the config reads, the clock would have counted
    its layers as nothing it knows."""
    r = CliRunner().invoke(app, ["clock", "explain", "--model-config",
                                 str(DATA / "tiny-dsv4.config.json"), "--gpu", "h100",
                                 "--case", "decode=64*1@4097"])
    assert (r.exit_code, r.output) == (2, (
        "error: option --model-config: deepseek_v4: the roofline clock does not time "
        "DeepSeek-V4's layers\n"))
