"""Kimi Linear (KimiLinearForCausalLM) against vLLM 0.33 built here on the meta device
(tests/data/kimi_linear/answers.json, its README): every KV cache spec, vLLM's groups and
KVCacheConfig on given memories at TP 1, 2 and 4, the weights and buffers per rank at TP 1-8."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models import read_hf_config
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs
from kvcore.specs import MambaSpec, MLAAttentionSpec

DATA = Path(__file__).parent / "data" / "kimi_linear"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
CONFIGS = ("tiny-kimi-linear", "kimi-linear-48b-a3b")
K3 = "tiny-kimi-k3"     # (Kimi-K3's class: the caches checked, the weights not counted)
GiB = 1 << 30
# (name, TP, the recorded rows at that TP)
PLANNED = [(n, int(tp), rows) for n in (*CONFIGS, K3)
           for tp, rows in [("1", CASES[n]["tp1"]), *CASES[n]["planned_at_tp"].items()]]
MANAGERS = {"mamba": "MambaManager", "mla": "FullAttentionManager"}


def _cfg(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.config.json").read_text())


def _config(name: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{name}.config.json"),
                                    "--max-model-len", str(CASES[name]["max_model_len"]), *args])


def _json(output: str) -> dict[str, Any]:
    return json.loads(output[output.index("{"):])   # (after the warnings' lines)


@pytest.mark.parametrize(("name", "tp", "rows"), PLANNED)
def test_every_cache_spec_is_vllms(name: str, tp: int, rows: dict[str, Any]) -> None:
    """KDA layers (1-based kda_layers) a MambaSpec: conv (kernel - 1, 3 x heads x dim / tp) in
    bf16 and a float32 (heads / tp, dim, dim) state, no prefill checkpoint, padded to the MLA
    page; MLA layers one 576-wide latent (tiny: 144) a token; the block a multiple of 128."""
    g = read_hf_config(_cfg(name), source=f"{name}.json")
    specs = layer_specs(g, tp=tp, max_model_len=CASES[name]["max_model_len"])
    at = "language_model.model." if name == K3 else "model."
    assert [at + n + ".self_attn" for n in specs] == [r["name"] for r in rows["specs"]]
    for r in rows["specs"]:
        s: Any = specs[r["name"].removeprefix(at).removesuffix(".self_attn")]
        assert (type(s).__name__, s.block_size, s.page_size_bytes) == (
            r["type"], r["block_size"], r["page_size_bytes"])
        if isinstance(s, MambaSpec):
            assert ([list(x) for x in s.shapes], list(s.dtypes), s.page_size_padded,
                    s.num_prefill_checkpoint_blocks) == (
                r["shapes"], r["dtypes"], r["page_size_padded"],
                r["num_prefill_checkpoint_blocks"])
        else:
            assert isinstance(s, MLAAttentionSpec)
            assert (s.num_kv_heads, s.head_size, s.dtype) == (
                r["num_kv_heads"], r["head_size"], r["dtype"])
    assert {s.block_size for s in specs.values()} == {rows["block_size"]}


def test_the_published_models_numbers() -> None:
    """Kimi-Linear-48B-A3B at TP 1: 20 KDA states of 3 x 12,288 x 2 + 32 x 128 x 128 x 4 =
    2,170,880 B, so a block of 1,920 tokens (15 x 128) of 1,152 B: 2,211,840 a page."""
    rows = CASES["kimi-linear-48b-a3b"]["tp1"]
    assert (rows["block_size"], rows["mamba_page_size_padded"]) == (1920, 2_211_840)
    kinds = [r["type"] for r in rows["specs"]]
    assert (kinds.count("MambaSpec"), kinds.count("MLAAttentionSpec")) == (20, 7)
    assert [i for i, k in enumerate(kinds) if k == "MLAAttentionSpec"] == [
        3, 7, 11, 15, 19, 23, 26]
    assert CASES["kimi-linear-48b-a3b"]["planned_at_tp"]["4"]["block_size"] == 512


@pytest.mark.parametrize(("name", "tp", "rows", "index"),
                         [(*p, i) for p in PLANNED for i in range(len(p[2]["planning"]))])
def test_kvcli_config_sizes_as_vllm_planned(name: str, tp: int, rows: dict[str, Any],
                                            index: int) -> None:
    """The published model at TP 1: 20 GiB -> 1,387 blocks, 60 GiB -> 4,161; at TP 4 5,201
    and 15,603, and 13,178 on 80 GiB's share (layer-outer tensors: a block is 7 layers'
    pages, the widest group's)."""
    plan = rows["planning"][index]
    r = _config(name, "--gpu-memory-gib", repr(plan["available"] / GiB),
                "--gpu-memory-utilization", "1", "--weights-gib", "0", "--json",
                "--tensor-parallel-size", str(tp))
    assert r.exit_code == 0, r.output
    d = _json(r.output)
    assert d["memory"]["available_kv_cache_bytes"] == plan["available"]
    assert (d["num_blocks"], d["kv_cache_tokens"], d["block_size"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"], plan["engine_block_size"])
    assert d["max_concurrency"] == pytest.approx(plan["max_concurrency"], rel=1e-12)
    at = "language_model.model." if name == K3 else "model."
    assert [([at + n + ".self_attn" for n in g["layers"]], g["page_size_bytes"],
             MANAGERS[g["kind"]]) for g in d["groups"]] == [
        (g["layers"], g["page_size_bytes"], m)
        for g, m in zip(plan["groups"], plan["managers"], strict=True)]
    pm = d["prefix_match"]
    assert (pm["scheduler_block_size"], pm["hash_block_size"],
            pm["cache_hit_alignment_tokens"]) == (
        plan["scheduler_block_size"], plan["hash_block_size"],
        plan["cache_hit_alignment_tokens"])


@pytest.mark.parametrize(("name", "tp"), [(n, tp) for n in CONFIGS for tp in (1, 2, 4, 8)
                                          if "refused" not in CASES[n]["tp"][str(tp)][0]])
def test_weights_and_buffers_per_rank_are_vllms(name: str, tp: int) -> None:
    """Every rank's parameter bytes (KDA's float32 conv, dt_bias and A_log; the float32 router
    bias; KimiMoE's experts padded to 256 a rank at TP 8: 49,122,681,728 parameters at TP 1,
    12,061,129,040 a rank at TP 8) and buffers (five float32 scalars an MLA layer, no RoPE)."""
    g = read_hf_config(_cfg(name), source=f"{name}.json")
    for rank in CASES[name]["tp"][str(tp)]:
        assert estimate_weights_bytes(g, tp) == sum(rank["param_bytes_by_dtype"].values())
        assert estimate_buffer_bytes(g, tp) == sum(rank["buffer_bytes_by_dtype"].values())


def test_on_80_gib() -> None:
    """TP 1: 91.5 GiB of bf16 weights do not fit; TP 4: 80 GiB x 0.92 less vLLM's rank
    (12,308,091,296 parameters, 140 B of buffers) -> 13,178 blocks of 7 x 589,824 B."""
    r = _config("kimi-linear-48b-a3b", "--gpu-memory-gib", "80")
    assert (r.exit_code, r.output) == (2, (
        "error: option --gpu-memory-gib: no memory left for the KV cache: 80 GiB x 0.92 = "
        "73.60 GiB, weights 91.50 GiB (estimated), buffers 140 B; short by 17.90 GiB\n"))
    d = _json(_config("kimi-linear-48b-a3b", "--gpu-memory-gib", "80", "--json",
                      "--tensor-parallel-size", "4").output)
    rank = CASES["kimi-linear-48b-a3b"]["tp"]["4"][0]
    available = int(80 * GiB * 0.92) - sum(rank["param_bytes_by_dtype"].values()) - 140
    assert d["memory"]["available_kv_cache_bytes"] == available
    assert (d["num_blocks"], d["bytes_per_block"]) == (available // (7 * 589_824), 7 * 589_824)
    # (vLLM's planner on that memory, recorded: the same 13,178 blocks, 6,727,426 tokens)
    plan = CASES["kimi-linear-48b-a3b"]["planned_at_tp"]["4"]["planning"][2]
    assert plan["available"] == available
    assert (d["num_blocks"], d["kv_cache_tokens"]) == (
        plan["num_blocks"], plan["kv_cache_tokens"]) == (13_178, 6_727_426)
    # (its 140 B of buffers read as bytes, not "0.00 MiB")
    text = _config("kimi-linear-48b-a3b", "--gpu-memory-gib", "80", "--tensor-parallel-size",
                   "4").output
    assert f"- buffers 140 B (estimated: RoPE caches, attention scales) = {available:,} bytes" \
        in text


def test_tp_that_does_not_divide_the_heads_is_refused_as_vllm_does() -> None:
    assert "divisible by tensor parallel size (8)" in CASES["tiny-kimi-linear"]["tp"]["8"][0][
        "refused"]
    r = _config("tiny-kimi-linear", "--gpu-memory-gib", "80", "--tensor-parallel-size", "8")
    assert (r.exit_code, r.output) == (2, (
        "error: option --tensor-parallel-size: kimi_linear's 4 attention heads must be "
        "divisible by it, as vLLM requires; got 8\n"))


@pytest.mark.parametrize(("change", "field"), [
    ({"linear_attn_config": None}, "linear_attn_config"),
    ({"linear_attn_config": {"kda_layers": [1], "full_attn_layers": None}},
     "linear_attn_config.full_attn_layers"),
    ({"mla_use_nope": False}, "mla_use_nope"),
    ({"kv_lora_rank": None}, "kv_lora_rank"),
])
def test_configs_vllm_cannot_build_are_refused_in_one_line(change: dict[str, Any],
                                                           field: str) -> None:
    with pytest.raises(InputError) as e:
        read_hf_config({**_cfg("tiny-kimi-linear"), **change}, source="k.json")
    assert e.value.field == field


def test_kda_heads_tp_does_not_divide_are_refused(tmp_path: Path) -> None:
    """vLLM's KDA layer asserts num_heads % tp_size == 0 (kimi_gdn_linear_attn.py): 6 heads at
    TP 4, where the 4 attention heads split."""
    cfg = _cfg("tiny-kimi-linear")
    cfg["linear_attn_config"] = {**cfg["linear_attn_config"], "num_heads": 6}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = CliRunner().invoke(app, ["config", "--model-config", str(tmp_path / "config.json"),
                                 "--gpu-memory-gib", "80", "--tensor-parallel-size", "4"])
    assert (r.exit_code, r.output) == (2, (
        "error: option --tensor-parallel-size: kimi_linear's 6 Kimi Delta Attention heads "
        "(linear_attn_config.num_heads) do not split over the ranks, and vLLM refuses to build "
        "it; got 4\n"))


def test_no_mla_block_size_warning_for_the_hybrid() -> None:
    """A plain MLA model's block is the backend's (a warning says so); Kimi Linear's is a
    multiple of 128 holding a KDA state whatever the backend's, so none (a warning before):
    only vLLM's own as it plans the groups (20 KDA layers in groups of 7, the last short)."""
    d = _json(_config("kimi-linear-48b-a3b", "--gpu-memory-gib", "80", "--json",
                      "--tensor-parallel-size", "4").stdout)
    assert d["warnings"] == ["Add 1 padding layers, may waste at most 5.00% KV cache memory"]


def test_kimi_k3s_weights_are_asked_for() -> None:
    """Kimi-K3's full-rank KDA gate and attention residuals keep Kimi Linear's caches (above)
    but other weights, which kvcli does not count: --weights-gib asked for (it was refused by
    name before)."""
    r = _config(K3, "--gpu-memory-gib", "80")
    assert (r.exit_code, r.output) == (2, (
        "error: option --weights-gib: kimi_k3: kvcli does not estimate Kimi-K3's layers' "
        "weights (attn_res_block_size, use_full_rank_gate): give the weights' measured size\n"))
