"""Nemotron-NAS (vLLM 0.33's DeciLMForCausalLM) sized as vLLM builds it: every KV cache layer's
spec at TP 1, 2, 4, 8, the one group vLLM makes of layers whose pages differ, each recorded
memory's KVCacheConfig, against tests/data/nemotron_nas/answers.json (vLLM built from a
stand-in of the remote config class). Before: kvcli refused the architecture by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.group_specs import UniformTypeKVCacheSpecs
from kvcore.models import read_hf_config
from kvcore.models.geometry import ModelGeometry
from kvcore.models.nemotron_nas import ffn_width
from kvcore.models.worker_specs import layer_specs
from kvcore.sizing.grouping import get_kv_cache_groups

DATA = Path(__file__).parent / "data" / "nemotron_nas"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
BUILT = [n for n, c in CASES.items() if "refused" not in c]
GiB = 1 << 30


def _cfg(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.config.json").read_text())


def _geometry(name: str, **edits: Any) -> ModelGeometry:
    return read_hf_config({**_cfg(name), **edits}, source=f"{name}.json")


def _config(name: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{name}.config.json"),
                                    "--max-model-len", str(CASES[name]["max_model_len"]), *args])


def _sized(name: str, available: int) -> dict[str, Any]:
    r = _config(name, "--gpu-memory-gib", repr(available / GiB), "--gpu-memory-utilization",
                "1", "--weights-gib", "0", "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_what_was_recorded() -> None:
    assert BUILT == ["tiny-nas-a", "tiny-nas-b", "super-49b-v1_5", "ultra-253b-v1"]
    assert [(CASES[n]["total_num_kv_heads"], CASES[n]["num_attention_layers"])
            for n in BUILT] == [(4, 4), (4, 3), (8, 49), (8, 64)]


@pytest.mark.parametrize("tp", ["1", "2", "4", "8"])
@pytest.mark.parametrize("name", BUILT)
def test_every_cache_spec_is_vllms(name: str, tp: str) -> None:
    """A full-attention spec for each layer with attention (none for a no_op one), its KV
    heads num_attention_heads // n_heads_in_group split over the ranks (or replicated)."""
    rank0 = CASES[name]["tp"][tp][0]
    if "refused" in rank0:      # (tiny-b's 12 heads at TP 8: refused, below)
        return
    specs: dict[str, Any] = layer_specs(_geometry(name), tp=int(tp))
    assert [f"model.{n}.self_attn.attn" for n in specs] == [s["name"] for s in rank0["specs"]]
    assert [(type(s).__name__, s.block_size, s.num_kv_heads, s.head_size, s.dtype,
             s.page_size_bytes) for s in specs.values()] == [
        (r["type"], r["block_size"], r["num_kv_heads"], r["head_size"], r["dtype"],
         r["page_size_bytes"]) for r in rank0["specs"]]


@pytest.mark.parametrize("name", BUILT)
def test_one_group_as_vllm_planned(name: str) -> None:
    """Pages that differ (tiny's 1, 2, 4 and 8 KV heads) make one UniformTypeKVCacheSpecs
    group whose block costs their sum; equal pages (Super's, Ultra's 8 heads) a plain one."""
    groups = get_kv_cache_groups(layer_specs(_geometry(name)))
    plan = next(p for p in CASES[name]["planning"] if "refused" not in p)
    assert [(["model." + n + ".self_attn.attn" for n in g.layer_names],
             type(g.kv_cache_spec).__name__) for g in groups] == [
        (g["layers"], g["spec"]) for g in plan["groups"]]
    assert isinstance(groups[0].kv_cache_spec, UniformTypeKVCacheSpecs) == name.startswith(
        "tiny")


@pytest.mark.parametrize(("name", "index"), [(n, i) for n in BUILT
                                             for i in range(len(CASES[n]["planning"]))])
def test_kvcli_config_sizes_as_vllm_planned(name: str, index: int) -> None:
    """tiny-a at 64 MiB: 1,092 blocks of 61,440 bytes (4 layers' pages); Super at 60 GiB:
    20,062; where vLLM refuses max_model_len, kvcli's largest fitting length is vLLM's."""
    plan = CASES[name]["planning"][index]
    if "refused" in plan:
        r = _config(name, "--gpu-memory-gib", repr(plan["available"] / GiB),
                    "--gpu-memory-utilization", "1", "--weights-gib", "0")
        words = " ".join(plan["refused"])
        longest = words.split("maximum model length is ")[1].split(".")[0]
        assert r.exit_code == 2 and len(r.output.splitlines()) == 1
        assert r.output.endswith(f"the largest max_model_len that fits is {longest}\n")
        return
    d = _sized(name, plan["available"])
    assert d["memory"]["available_kv_cache_bytes"] == plan["available"]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["num_tensors"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], len(plan["tensors"]))
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    assert [g["page_size_bytes"] for g in d["groups"]] == [
        g["page_size_bytes"] for g in plan["groups"]]
    assert d["prefix_match"]["cache_hit_alignment_tokens"] == plan["cache_hit_alignment_tokens"]


def test_published_numbers() -> None:
    """Super at TP 1: 49,867,145,216 parameters (99.7 GB) leave nothing of 80 GiB; Ultra's
    253,401,268,224."""
    r = _config("super-49b-v1_5", "--gpu-memory-gib", "80")
    assert (r.exit_code, r.output) == (2, (
        "error: option --gpu-memory-gib: no memory left for the KV cache: 80 GiB x 0.92 = "
        "73.60 GiB, weights 92.88 GiB (estimated), buffers 32.00 MiB; short by 19.32 GiB\n"))
    assert CASES["super-49b-v1_5"]["tp"]["1"][0]["param_numel"] == 49_867_145_216
    assert CASES["ultra-253b-v1"]["tp"]["1"][0]["param_numel"] == 253_401_268_224


@pytest.mark.parametrize(("name", "tp", "blocks"), [
    ("super-49b-v1_5", "4", 67_336), ("super-49b-v1_5", "8", 165_729),
    ("ultra-253b-v1", "8", 29_829)])
def test_80_gib_as_vllm_plans_it(name: str, tp: str, blocks: int) -> None:
    """`kvcli config --gpu-memory-gib 80`: 80 GiB x 0.92 less a rank's weights and buffers as
    vLLM built them; vLLM's planner on what is left gives the same blocks."""
    rank0 = CASES[name]["tp"][tp][0]
    plan = rank0["planning_80_gib"]
    d = json.loads(_config(name, "--gpu-memory-gib", "80", "--tensor-parallel-size", tp,
                           "--json").stdout)
    weights = sum(rank0["param_bytes_by_dtype"].values())
    buffers = sum(rank0["buffer_bytes_by_dtype"].values())
    assert d["memory"]["buffers_bytes"] == buffers
    assert d["memory"]["available_kv_cache_bytes"] == int(80 * GiB * 0.92) - weights - buffers \
        == plan["available"]
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"]) == (blocks, blocks * 16)


def test_ffn_width_rounds_up_to_256() -> None:
    """_ffn_mult_to_intermediate_size: Super's 5.25, 2.625, 0.5 of 8,192; Ultra's 0.4875 and
    39.0 of 16,384."""
    assert [ffn_width(m, 8192) for m in (5.25, 2.625, 0.5)] == [28672, 14336, 2816]
    assert [ffn_width(m, 16384) for m in (0.4875, 39.0)] == [5376, 425984]


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if "refused" in c])
def test_what_vllm_cannot_build_is_refused_in_one_line(name: str) -> None:
    """A replace_with_linear layer (vLLM divides by the None the config class leaves), no
    attention layer at all (ModelConfig finds no KV heads)."""
    with pytest.raises(InputError) as e:
        _geometry(name)
    text, vllm = str(e.value), " ".join(CASES[name]["refused"])
    assert "\n" not in text
    at = {"tiny-nas-linear-attn": ("nemotron_nas.py:150", "attention.replace_with_linear"),
          "tiny-nas-linear-ffn": ("nemotron_nas.py:62", "ffn.replace_with_linear"),
          "tiny-nas-no-attn": ("model_arch_config_convertor.py:543", "'block_configs'")}[name]
    assert CASES[name]["raised_at"].endswith(at[0]) and at[1] in text
    words = ("TypeError: unsupported operand type(s)" if "Type" in vllm else
             "Could not determine the number of key-value attention heads")
    assert words in vllm and words in text


def test_tp_refusals() -> None:
    """tiny-b's 12 heads at TP 8 (vLLM asserts building the layer; its ModelConfig first);
    a later layer's KV heads that the ranks do not divide (6 of 12 at TP 4)."""
    vllm = CASES["tiny-nas-b"]["tp"]["8"][0]
    assert vllm["refused"] == ["AssertionError:"]
    assert vllm["raised_at"] == "model_executor/models/llama.py:145"    # (heads % tp)
    r = _config("tiny-nas-b", "--tensor-parallel-size", "8", "--weights-gib", "0")
    assert r.exit_code == 2 and "12 attention heads must be divisible" in r.output
    cfg = _cfg("tiny-nas-b")
    cfg["block_configs"][3]["attention"]["n_heads_in_group"] = 2
    with pytest.raises(InputError, match="layer 3 has 6 KV heads, and it and they must divide"):
        from kvcore.sizing.tp_refusals import refuse_tp
        refuse_tp(read_hf_config(cfg), 4, False)


@pytest.mark.parametrize(("edit", "field", "words"), [
    ({"block_configs": None}, "block_configs", "must list 5 blocks"),
    ({"block_configs": [{"attention": {"no_op": True, "replace_with_linear": True},
                         "ffn": {"ffn_mult": 1.0}}] * 5}, "block_configs[0].attention",
     "both true"),
    ({"block_configs": [{"attention": {"n_heads_in_group": 13}, "ffn": {"ffn_mult": 1.0}}] * 5},
     "block_configs[0].attention.n_heads_in_group", "an integer from 1 to 12 whose KV heads"),
    ({"block_configs": [{"attention": {"n_heads_in_group": 3}, "ffn": {}}] * 5},
     "block_configs[0].ffn.ffn_mult", "expected a number above 0, got None")])
def test_bad_block_configs(edit: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        _geometry("tiny-nas-b", **edit)
    assert e.value.field == field and words in str(e.value)


def test_the_class_reads_block_configs_whatever_the_model_type() -> None:
    """DeciLMForCausalLM without model_type nemotron-nas (an older DeciLM's config): vLLM's
    class reads block_configs all the same, so a config without them is refused, not read as
    plain Llama; with them it is sized as nemotron-nas."""
    cfg = {k: v for k, v in _cfg("tiny-nas-a").items() if k not in ("model_type",)}
    assert read_hf_config(cfg).nas == _geometry("tiny-nas-a").nas
    cfg.pop("block_configs")
    with pytest.raises(InputError, match="'block_configs': must list 6 blocks"):
        read_hf_config(cfg, source="c.json")


def test_the_clock_refuses_it_in_one_line() -> None:
    """Timed as a plain decoder it would bill no MLP (intermediate_size null) and every
    layer's attention."""
    r = CliRunner().invoke(app, ["clock", "explain", "--model-config",
                                 str(DATA / "super-49b-v1_5.config.json"), "--gpu", "h100",
                                 "--case", "decode=64*1@4097"])
    assert (r.exit_code, r.output) == (2, (
        "error: option --model-config: llama_nemotron_super: the roofline clock does not time "
        "Nemotron-NAS's layers (no-op attention, MLP widths a layer)\n"))


@pytest.mark.parametrize("mode", ["engine", "cache"])
def test_replay_runs_it(mode: str, tmp_path: Path) -> None:
    """One full-attention group (FullAttentionManager over the uniform-type group, as vLLM's
    registry gives it): the second request hits the shared 64-token prefix."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(
        {"timestamp": i, "input_length": 128, "output_length": 4, "block_size": 16,
         "hash_ids": [1, 2, 3, 4] + [100 + 10 * i + k for k in range(4)]}) + "\n"
        for i in range(2)))
    r = CliRunner().invoke(app, ["replay", str(trace), "--mode", mode, "--model-config",
                                 str(DATA / "tiny-nas-a.config.json"), "--num-blocks", "400",
                                 "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["prompt_tokens"], d["hit_tokens"]) == (256, 64)
    assert all(p["managers"] == ["FullAttentionManager"] for n in BUILT
               for p in CASES[n]["planning"] if "refused" not in p)
