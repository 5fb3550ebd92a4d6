"""LongCat-Flash (`longcat_flash`, vLLM 0.33's longcat_flash.py): a decoder layer of two
multi-head latent attentions (DeepSeek-V2's, `self_attn.0` and `.1`), four RMSNorms, two dense
MLPs ``ffn_hidden_size`` wide and one MoE of ``n_routed_experts`` experts
``expert_ffn_hidden_size`` wide beside ``zero_expert_num`` zero-computation experts (identity:
no weights), whose router is float32, ``n_routed_experts + zero_expert_num`` wide, with a
float32 score bias; no shared expert.

Read as ``2 x num_layers`` MLA attention layers (the config class's ``num_hidden_layers``,
what vLLM's KV cache holds and perf.py bills); the weights a decoder layer at a time
(`longcat_ledger`). Checked on the meta device, every rank: tests/data/weights_census/longcat/.
Pipeline stages split the ``num_layers`` decoder layers (`decoder_ranges`; recorded in
tests/data/weights_census/longcat_pp/). An fp8 block checkpoint (LongCat-Flash-Chat-FP8's
method): every linear and expert in fp8 with its block scales, the router float32, the
embedding, norms and LM head in the model dtype (tests/data/weights_census/longcat_fp8/).
Not modelled, refused by name: other quantisations, an fp8 ignore list, per-tensor fp8,
``disable_quant_module``. Its MTP module: `kvcore.models.mtp_draft.longcat_mtp`.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models import fp8_scales, fp8_shapes
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger

LONGCAT = "longcat_flash"
# kvcli's key: LongcatFlashConfig's own (transformers 5.20's attribute_map)
ALIASES = {"intermediate_size": "ffn_hidden_size",
           "moe_intermediate_size": "expert_ffn_hidden_size",
           "num_experts_per_tok": "moe_topk"}
# LongcatFlashConfig's defaults (transformers 5.20), under its own keys
DEFAULTS: dict[str, Any] = {
    "num_layers": 28, "hidden_size": 6144, "num_attention_heads": 64, "vocab_size": 131072,
    "max_position_embeddings": 131072, "ffn_hidden_size": 12288, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "moe_topk": 12, "n_routed_experts": 512, "zero_expert_num": 256,
    "expert_ffn_hidden_size": 2048}
# (keys the class lacks and vLLM's model reads: without them building it fails)
_READ_BY_VLLM = ("mla_scale_q_lora", "mla_scale_kv_lora", "zero_expert_type")


def longcat_derived(out: dict[str, Any], c: dict[str, Any], source: str) -> dict[str, Any]:
    """The class's ``num_hidden_layers`` (2 x ``num_layers``, a given ``num_hidden_layers``
    setting ``num_layers`` to half of it) and vLLM's refusal of a config without the keys
    its model reads."""
    missing = next((k for k in _READ_BY_VLLM if c.get(k) is None), None)
    if missing is not None:
        raise InputError(f"model_type {LONGCAT!r} without '{missing}': vLLM 0.33's "
                         "longcat_flash.py reads it and LongcatFlashConfig does not default "
                         "it (AttributeError)", path=source or None, field=missing)
    if c.get("num_layers") is None and isinstance(c.get("num_hidden_layers"), int):
        out["num_layers"] = c["num_hidden_layers"] // 2
    layers = out["num_layers"]
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
        raise InputError(f"expected an integer >= 1, got {layers!r}", path=source or None,
                         field="num_layers")
    out["num_hidden_layers"] = 2 * layers
    return out


def longcat_unsized(g: ModelGeometry, c: dict[str, Any]) -> str:
    """Why kvcli does not size this checkpoint's weights ("" where it does): quantised other
    than fp8 in 128 x 128 blocks with no ignore list, or with modules left unquantised."""
    if not g.quantization:
        return ""
    if g.quantization != "fp8" or g.fp8_block is None or g.fp8_ignored \
            or c.get("disable_quant_module"):
        return ("a quantised LongCat-Flash checkpoint's weights (kvcli sizes fp8 in blocks, "
                "no module left unquantised)")
    return ""


def decoder_ranges(attention_ranges: list[range]) -> list[range]:
    """A pipeline split of the decoder layers (vLLM splits ``num_layers``) as kvcli's layers,
    the attentions: decoder layer i is attentions 2i and 2i + 1."""
    return [range(2 * r.start, 2 * r.stop) for r in attention_ranges]


def longcat_ledger(g: ModelGeometry, tp: int, zero_experts: int, layers: range | None = None,
                   first: bool = True, last: bool = True) -> Ledger:
    """One of ``tp`` ranks' parameters, of the whole model or of the pipeline stage holding
    attentions ``layers`` (`decoder_ranges`): the embedding on the first stage, the final
    norm and the LM head on the last."""
    h, e = g.hidden_size, g.num_experts
    led = Ledger()
    # (the embedding and its own LM head, whatever tie_word_embeddings says: longcat_flash.py
    # ties none; the final norm)
    led.model += rp.vocab_rows(g, tp) * h * (first + last) + h * last
    n = len(g.layer_kinds) if layers is None else len(layers)
    for _ in range(n // 2):
        rp.attention(g, tp, led)
        rp.attention(g, tp, led)
        led.model += 4 * h
        led.layer += 2 * 3 * h * g.intermediate_size // tp
        led.layer += e * 3 * h * g.moe_intermediate_size // tp
        led.fp32 += (e + zero_experts) * (h + 1)     # (the router and its score bias)
    if g.quantization == "fp8":
        # (a decoder layer's block scales: two MLA attentions with their dense MLPs, as a
        # dense MLA layer's, and its routed experts: tests/data/weights_census/longcat_fp8)
        per_layer = 2 * fp8_scales.rank_scales(g, fp8_shapes.layer_linears(
            g, tp, "mla", False, 0)) + fp8_shapes.expert_scales(g, tp, g.fp8_block)
        led.fp32 += per_layer * (n // 2)
    return led
