"""DeepSeek-V4's weights and buffers a rank against vLLM 0.33's DeepseekV4ForCausalLM built on
the meta device at TP 1, 2, 4 and 8 (tests/data/deepseek_v4/answers.json: Flash, tiny and two
synthetic variations; every rank recorded, rank 0 by name)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvcore.errors import InputError
from kvcore.models.buffers import estimate_buffer_bytes
from kvcore.models.deepseek_v4_weights import v4_ledger, v4_named_params
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.models.mtp_draft import mtp_draft
from kvcore.models.weights import estimate_params, estimate_weights_bytes

DATA = Path(__file__).parent / "data" / "deepseek_v4"
CASES = json.loads((DATA / "answers.json").read_text())["cases"]
TPS = ("1", "2", "4", "8")
HELD_AS = {"model": "bfloat16", "layer": "bfloat16", "fp32": "float32", "int32": "int32"}


def _geometry(name: str, **edits: object) -> ModelGeometry:
    cfg = json.loads((DATA / f"{name}.config.json").read_text())
    return read_hf_config({**cfg, **edits}, name=name, source=f"{name}.config.json")


@pytest.mark.parametrize("tp", TPS)
@pytest.mark.parametrize("name", list(CASES))
def test_every_parameter_by_name(name: str, tp: str) -> None:
    """Each parameter (layer indices folded), its elements on a rank and its dtype."""
    recorded = CASES[name]["tp"][tp][0]
    named = v4_named_params(_geometry(name), int(tp))
    assert {k: n for k, (_, n) in named.items()} == recorded["param_numel_by_name"]
    assert {k: HELD_AS[how] for k, (how, _) in named.items()} == recorded["dtype_by_name"]


@pytest.mark.parametrize("tp", TPS)
@pytest.mark.parametrize("name", list(CASES))
def test_rank_bytes_by_dtype(name: str, tp: str) -> None:
    """Every rank alike, each equal to kvcli's rank: bytes by dtype and their sum."""
    g = _geometry(name)
    led = v4_ledger(g, int(tp))
    mine = {"bfloat16": 2 * (led.model + led.layer), "float32": 4 * led.fp32,
            "int32": 4 * led.int32}
    for rank in CASES[name]["tp"][tp]:
        assert rank["param_bytes_by_dtype"] == {k: v for k, v in mine.items() if v}
        assert estimate_weights_bytes(g, int(tp)) == sum(rank["param_bytes_by_dtype"].values())
        assert led.model + led.layer + led.fp32 + led.int32 == rank["param_numel"]


def test_published_counts() -> None:
    """Flash's 284B at TP 1 and its shares (vLLM's numbers, typed in), tiny's."""
    flash, tiny = _geometry("deepseek-v4-flash"), _geometry("tiny-dsv4")
    assert estimate_params(flash) == (284_328_196_055, 0)
    assert estimate_params(tiny) == (62_826_717, 0)

    def numel(g: ModelGeometry, tp: int) -> int:
        led = v4_ledger(g, tp)
        return led.model + led.layer + led.fp32 + led.int32
    assert [numel(flash, tp) for tp in (1, 2, 4, 8)] == [
        284_328_196_055, 142_580_643_799, 71_706_867_671, 36_269_979_607]
    assert [numel(tiny, tp) for tp in (1, 2, 4, 8)] == [62_826_717, 37_136_605, 24_291_549,
                                                       17_869_021]
    # Flash at TP 8: bf16, float32 (hyper-connections, sinks, ape) and int32 (tid2eid) bytes
    assert estimate_weights_bytes(flash, 8) == 72_464_311_296 + 141_987_676 + 9_308_160


@pytest.mark.parametrize("tp", TPS)
@pytest.mark.parametrize("name", list(CASES))
def test_buffers(name: str, tp: str) -> None:
    """The RoPE caches (float32; one for sliding-only layers, one for compressed ones) as
    vLLM registers them, and the top-k scratch its model allocates beside them."""
    g = _geometry(name)
    recorded = CASES[name]["tp"][tp]
    assert all(estimate_buffer_bytes(g, int(tp)) == sum(r["buffer_bytes_by_dtype"].values())
               for r in recorded)
    scratch = recorded[0]["scratch"]["model.topk_indices_buffer"]
    batched, topk = scratch["shape"]
    assert scratch["dtype"] == "int32" and topk == g.v4.index_topk   # type: ignore[union-attr]
    assert estimate_buffer_bytes(g, int(tp), batched_tokens=batched) == (
        estimate_buffer_bytes(g, int(tp)) + scratch["bytes"])


def test_buffers_by_stage() -> None:
    """A stage holds the RoPE caches its layers build: tiny's sliding-only layer 2 the main
    one, its compressed layers the compress one (16 MiB each)."""
    g = _geometry("tiny-dsv4")
    assert estimate_buffer_bytes(g, 1, range(2, 3)) == 65_536 * 64 * 4
    assert estimate_buffer_bytes(g, 1, range(2)) == 65_536 * 64 * 4
    assert estimate_buffer_bytes(_geometry("deepseek-v4-flash"), 1) == 256 << 20


def test_quantised_checkpoint_and_vision_wrapper_refused() -> None:
    """DeepSeek-V4's fp8 / fp4 checkpoints and its vision wrapper: refused, not counted as a
    bf16 text model (--num-blocks still sizes their cache)."""
    fp8 = _geometry("tiny-dsv4", quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128], "scale_fmt": "ue8m0"})
    with pytest.raises(InputError) as err:
        estimate_weights_bytes(fp8, 1)
    assert str(err.value) == (
        "field 'weights_gib': tiny-dsv4: kvcli does not estimate DeepSeek-V4's weights under "
        "its quantization_config (quant_method 'fp8': block-fp8 linears, fp4 or fp8 experts): "
        "give the weights' measured size")
    vl = _geometry("tiny-dsv4", architectures=["DeepseekV4ForConditionalGeneration"])
    with pytest.raises(InputError, match="kvcli does not estimate the weights of DeepseekV4"
                                         r"ForConditionalGeneration \(its vision tower"):
        estimate_weights_bytes(vl, 1)


def test_refusals() -> None:
    """More query heads a rank than FlashMLA takes (pipeline stages, refused here until
    recorded: tests/test_deepseek_v4_pp.py)."""
    g = _geometry("tiny-dsv4")
    with pytest.raises(InputError, match="field 'num_hash_layers': must be a layer count"):
        _geometry("tiny-dsv4-hash1", num_hash_layers=-1)
    wide = _geometry("tiny-dsv4", num_attention_heads=256, o_groups=8)
    with pytest.raises(InputError, match=r"does not support 256 heads .* 256 query heads on 1"):
        v4_ledger(wide, 1)
    assert v4_ledger(wide, 2).fp32 == v4_ledger(g, 1).fp32 + 4 * 64    # (128 a rank)


def test_its_mtp_module_is_not_said_refused_by_vllm() -> None:
    """vLLM 0.33 drafts with DeepSeek-V4's MTP module (DeepSeekV4MTPModel); kvcli does not
    model it, and says so (before: "vLLM 0.33 refuses it")."""
    with pytest.raises(InputError) as err:
        mtp_draft(_geometry("tiny-dsv4"))
    assert str(err.value) == (
        "field 'spec_method': mtp with tiny-dsv4: kvcli does not model DeepSeek-V4's MTP module "
        "(vLLM 0.33's DeepSeekV4MTPModel), its caches and weights unrecorded")
