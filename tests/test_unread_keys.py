"""Keys of Laguna, Seed-OSS and Apertus that kvcli did not read, and Laguna's fp8 g_proj, against
vLLM 0.33.0's classes on the meta device (tests/data/weights_census/unread_keys/, TP 1, 2, 4 and
8, every rank; `--dtype float32` where the model dtype tells a fixed dtype apart):
``swa_attention_sink_enabled`` (a sink logit a query head on Laguna's sliding layers, in the
model dtype), Seed-OSS's ``attention_out_bias`` (o_proj's bias, whole), Apertus' XIELU (its
alpha_p and alpha_n parameters and beta and eps buffers bfloat16 whatever the model dtype), and
an fp8 Laguna's g_proj (its block scales, and vLLM's refusal of a shard of partial blocks:
gate_proj and up_proj separate linears too); and `--dtype`'s RoPE caches, in the served
dtype."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from kv_census_rows import kvcli_specs, same, vllm_specs
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.errors import InputError
from kvcore.models.hf_config import read_hf_config
from kvcore.models.rope_cache import served_in
from kvcore.models.weights import estimate_params, estimate_weights_bytes
from kvcore.sizing.resolve import resolve_kv_cache_config
from tests.census_rows import assert_rank_equal, built_ranks, check_ranks_agree

DATA = Path(__file__).parent / "data" / "weights_census" / "unread_keys"
ANSWERS = json.loads((DATA / "answers.json").read_text())
CASES = ANSWERS["cases"]
BUILT = {n: c for n, c in CASES.items() if "refused" not in c["tp"]["1"][0]}


def _geometry(name: str):
    base = name.split(" ")[0]
    g = read_hf_config(json.loads((DATA / f"{base}.config.json").read_text()), name=base)
    dtype = (CASES[name].get("mm_options") or {}).get("dtype")
    # (as `kvcli config --dtype` serves it: its RoPE caches in the served dtype too)
    return replace(g, dtype=dtype, rope_caches=served_in(g.rope_caches, g.dtype, dtype)) \
        if dtype else g


def _rank0(name: str, tp: str = "1") -> dict:
    return CASES[name]["tp"][tp][0]


@pytest.mark.parametrize(("name", "tp", "rank"), built_ranks(BUILT))
def test_bytes_and_buffers_per_rank_equal_vllms(name: str, tp: int, rank: int) -> None:
    rec = CASES[name]["tp"][str(tp)][rank]
    g = _geometry(name)
    assert_rank_equal(g, tp, rec)


@pytest.mark.parametrize("name", sorted(BUILT))
def test_parameter_count_equals_vllms(name: str) -> None:
    assert estimate_params(_geometry(name))[0] == _rank0(name)["param_numel"]


def test_the_census_covers_every_config() -> None:
    bases = {p.name.removesuffix(".config.json") for p in DATA.glob("*.config.json")}
    assert bases == {n.split(" ")[0] for n in CASES} == set(ANSWERS["kv_specs"])
    assert (len(bases), len(CASES)) == (7, 9)
    check_ranks_agree({n: c for n, c in CASES.items() if "fp8" not in n})


@pytest.mark.parametrize("base", sorted(ANSWERS["kv_specs"]))
def test_kv_specs_equal_vllms(base: str) -> None:
    """The sinks change no spec: Laguna's sliding layers' specs are those without them."""
    row = ANSWERS["kv_specs"][base]
    ours = kvcli_specs(row, row["config"]["architectures"][0])
    assert not isinstance(ours, InputError) and same(ours, vllm_specs(row))


def test_laguna_sliding_layer_holds_a_sink_a_head() -> None:
    """Layer 1 (sliding) alone: 16 heads' sinks at TP 1, 2 a rank at TP 8, in the model dtype
    (64 B under --dtype float32); kvcli counted none (7,180,224 B at TP 1, not 7,180,256)."""
    for tp, per_rank in (("1", 16), ("8", 2)):
        names = _rank0("tiny-laguna-swa-sinks", tp)["param_numel_by_name"]
        # (the census folds the layers' names: one sliding layer of the three)
        assert {k: v for k, v in names.items() if k.endswith(".sink")} == {
            "model.layers.*.self_attn.sink": per_rank}
    g = _geometry("tiny-laguna-swa-sinks")
    assert g.sink_layers == (False, True, False)
    without = replace(g, sink_layers=())
    assert estimate_weights_bytes(g, 1) - estimate_weights_bytes(without, 1) == 32
    fp32 = _geometry("tiny-laguna-swa-sinks --dtype float32")
    assert estimate_weights_bytes(fp32, 8) - estimate_weights_bytes(
        replace(fp32, sink_layers=()), 8) == 8 == 2 * 4


def test_seed_oss_out_bias_is_o_projs_whole_bias() -> None:
    """4 layers' o_proj bias, 256 wide, whole on every rank: 2,048 B at every TP."""
    for tp in ("1", "8"):
        names = _rank0("tiny-seed-oss-out-bias", tp)["param_numel_by_name"]
        assert {k: v for k, v in names.items() if k.endswith("bias")} == {
            "model.layers.*.self_attn.o_proj.bias": 4 * 256}
    g = _geometry("tiny-seed-oss-out-bias")
    assert g.attention_out_bias and not g.attention_bias
    assert estimate_weights_bytes(g, 8) - estimate_weights_bytes(
        replace(g, attention_out_bias=False), 8) == 2_048


def test_apertus_xielu_is_bfloat16_under_any_model_dtype() -> None:
    """Its 8 parameters 16 B of bfloat16 under --dtype float32 (kvcli had 32 B, in float32),
    and its 8 buffers 16 B more (kvcli had none)."""
    rec = _rank0("tiny-apertus --dtype float32", "8")
    assert rec["param_bytes_by_dtype"]["bfloat16"] == 16
    assert estimate_weights_bytes(_geometry("tiny-apertus --dtype float32"), 8) == 1_320_976
    assert _rank0("tiny-apertus")["buffer_bytes_by_dtype"]["persistent"]["bfloat16"] == 16


def test_laguna_fp8_g_proj_holds_block_scales() -> None:
    """g_proj's float32 scales a layer: 8 x 8 blocks for 1,024 outputs, 1 x 8 for 16 (kvcli
    had none: 768 B and 96 B short at TP 1)."""
    assert _rank0("tiny-laguna-fp8-gate-per-element")["param_bytes_by_dtype"]["float32"] == 10_240
    assert estimate_weights_bytes(_geometry("tiny-laguna-fp8-gate-per-element"), 1) == 45_933_336
    assert estimate_weights_bytes(_geometry("tiny-laguna-fp8-gate-per-head"), 1) == 42_836_088


@pytest.mark.parametrize(("name", "tp", "layer", "module"), [
    ("tiny-laguna-fp8-gate-per-head", 2, 0, "g_proj"),
    ("tiny-laguna-fp8-gate-per-head", 4, 0, "g_proj"),
    ("tiny-laguna-fp8-gate-per-head", 8, 0, "g_proj"),
    # (the shared expert's gate_proj, 512 / 8 wide: a ColumnParallelLinear of its own, not a
    # merged gate_up, so its shard is checked; kvcli had named down_proj's input)
    ("tiny-laguna-fp8-gate-per-element", 8, 1, "gate_proj")])
def test_laguna_fp8_refused_in_vllms_words(name: str, tp: int, layer: int, module: str) -> None:
    said = _rank0(name, str(tp))["refused"].removeprefix("ValueError: ")
    with pytest.raises(InputError) as e:
        resolve_kv_cache_config(geometry=_geometry(name), tensor_parallel_size=tp,
                                gpu_memory_gib=80, max_model_len=4096)
    assert e.value.field == "tensor_parallel_size"
    assert f"(layer {layer}'s {module}), and vLLM refuses to build it: \"{said}\"; got {tp}" \
        in e.value.message


@pytest.mark.parametrize(("base", "buffers"), [("tiny-apertus", 8_388_688),
                                               ("tiny-laguna-swa-sinks", 25_165_872)])
def test_config_dtype_serves_the_rope_caches_in_it(base: str, buffers: int) -> None:
    """`--dtype float32` over a bfloat16 config: vLLM's RoPE caches are float32 (get_rope's
    default dtype, the served one); kvcli had kept them bfloat16 (4,194,384 and 12,582,960)."""
    rec = _rank0(f"{base} --dtype float32", "8")
    assert sum(sum(b.values()) for b in rec["buffer_bytes_by_dtype"].values()) == buffers
    r = CliRunner().invoke(app, ["config", "--model-config", str(DATA / f"{base}.config.json"),
                                 "--gpu-memory-gib", "1", "--dtype", "float32",
                                 "--tensor-parallel-size", "8", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["memory"]["buffers_bytes"] == buffers

