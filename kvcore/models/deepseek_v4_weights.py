"""DeepSeek-V4's parameters on one tensor-parallel rank, as vLLM 0.33's CUDA implementation
builds them (vllm/models/deepseek_v4/nvidia/model.py, attention.py, compressor.py; the
FlashMLA attention an H100 gets). Checked name by name on the meta device, every rank, at TP
1, 2, 4 and 8 for four configs: tests/data/deepseek_v4/answers.json.

A decoder layer i (compress ratio r: `V4Geometry.compress_ratios`):
- hyper-connections, float32: ``hc_attn_fn`` / ``hc_ffn_fn`` ((2 + m) m x m hidden, m the
  ``hc_mult`` copies of the residual stream), their ``_base`` ((2 + m) m) and ``_scale`` (3);
- attention: ``fused_wqa_wkv`` (hidden -> q LoRA + head, replicated), ``q_norm``, ``wq_b``
  (split by heads), ``kv_norm``, the grouped output LoRA ``wo_a`` (heads x head / groups ->
  groups x o LoRA, column-parallel) and ``wo_b`` (row-parallel), ``attn_sink`` (float32, one
  a query head as FlashMLA pads a rank's heads: 64, or 128 above 64; more refused);
- r > 1: a compressor, replicated, built without the quant_config: ``ape`` (float32, r x
  coff x head, coff 2 where r is 4: overlapping windows), ``fused_wkv_wgate`` (hidden ->
  2 coff head), ``norm``; r 4: the indexer, replicated (``wq_b`` with the quant_config,
  ``weights_proj`` without) and its own compressor (the indexer's head, coff 2);
- the MoE: the router ``gate`` (experts x hidden in the model dtype: GateLinear's output alone
  is float32), its int32 ``tid2eid`` (vocab x experts a token) on the first
  ``mlp_layer_types.count("hash_moe")`` layers (vLLM counts them, it does not read where they
  are), else a float32 ``e_score_correction_bias`` with ``topk_method`` noaux_tc; the shared
  experts' MLP (n_shared x moe_intermediate wide; 0 builds an empty one) and the routed
  experts, both split by TP; ``attn_norm``, ``ffn_norm``.
The model: the embedding and an LM head of its own (the vocabulary padded to 64, split by TP;
DeepseekV4ForCausalLM ties neither), the final norm, ``hc_head_fn`` / ``_base`` / ``_scale``
(float32), on every pipeline stage; the embedding on the first stage, the norm and the head on
the last. Not modelled, refused by `weights._ledger`: quantised checkpoints and the vision
wrapper (`unmodelled`).
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.deepseek_v4 import INDEXED_RATIO, V4Geometry
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger, vocab_rows

# FlashMLA's fp8 decode kernel takes 64 or 128 query heads a rank (nvidia/flashmla.py
# get_padded_num_q_heads): the sink is padded to that many
FLASHMLA_HEADS = (64, 128)
VISION_WRAPPER = "DeepseekV4ForConditionalGeneration"
# how a parameter is held (`Ledger`'s fields): "layer", a linear built with the quant_config;
# "model", in the model dtype whatever the checkpoint; "fp32" and "int32" whatever the dtype
LAYER, MODEL, FP32, INT32 = "layer", "model", "fp32", "int32"
# a parameter's name, layer indices folded ("model.layers.*.attn.wq_b.weight") ->
# (how it is held, its elements on a rank summed over the layers)
Named = dict[str, tuple[str, int]]


def padded_heads(heads: int, tp: int) -> int:
    """The query heads a rank's attention sink holds: its heads padded as FlashMLA pads them."""
    local = heads // tp
    if local > FLASHMLA_HEADS[-1]:
        raise InputError(f"DeepseekV4 FlashMLA does not support {local} heads (FP8 decode "
                         "kernel requires h_q in {64, 128}): vLLM 0.33 refuses "
                         f"{heads} query heads on {tp} rank(s)", field="tensor_parallel_size")
    return next(h for h in FLASHMLA_HEADS if local <= h)


def _add(out: Named, name: str, held: str, n: int) -> None:
    out[name] = (held, out[name][1] + n if name in out else n)


def _compressor(g: ModelGeometry, ratio: int, head: int, at: str, out: Named) -> None:
    """A compressor of `head`-wide states (compressor.py): replicated, no quant_config."""
    coff = 2 if ratio == INDEXED_RATIO else 1     # (C4's overlapping windows: two states)
    _add(out, f"{at}.ape", FP32, ratio * coff * head)
    _add(out, f"{at}.fused_wkv_wgate.weight", MODEL, g.hidden_size * 2 * coff * head)
    _add(out, f"{at}.norm.weight", MODEL, head)


def _attention(g: ModelGeometry, v4: V4Geometry, ratio: int, tp: int, out: Named) -> None:
    h, hd, heads, q = g.hidden_size, g.head_dim, g.num_attention_heads, v4.q_lora_rank
    at = "model.layers.*.attn"
    _add(out, f"{at}.attn_sink", FP32, padded_heads(heads, tp))
    _add(out, f"{at}.fused_wqa_wkv.weight", LAYER, h * (q + hd))     # (replicated)
    _add(out, f"{at}.q_norm.weight", MODEL, q)
    _add(out, f"{at}.wq_b.weight", LAYER, q * heads * hd // tp)
    _add(out, f"{at}.kv_norm.weight", MODEL, hd)
    lora = v4.o_groups * v4.o_lora_rank
    _add(out, f"{at}.wo_a.weight", LAYER, heads * hd // v4.o_groups * (lora // tp))
    _add(out, f"{at}.wo_b.weight", LAYER, lora // tp * h)
    if ratio > 1:
        _compressor(g, ratio, hd, f"{at}.compressor", out)
    if ratio == INDEXED_RATIO:      # (the indexer: replicated, weights_proj without quant)
        _add(out, f"{at}.indexer.wq_b.weight", LAYER, q * v4.index_n_heads * v4.index_head_dim)
        _add(out, f"{at}.indexer.weights_proj.weight", MODEL, h * v4.index_n_heads)
        _compressor(g, ratio, v4.index_head_dim, f"{at}.indexer.compressor", out)


def _moe(g: ModelGeometry, hash_routed: bool, tp: int, out: Named) -> None:
    h, e, at = g.hidden_size, g.num_experts, "model.layers.*.ffn"
    _add(out, f"{at}.gate.weight", MODEL, e * h)
    if hash_routed:
        _add(out, f"{at}.gate.tid2eid", INT32, g.vocab_size * g.num_experts_per_tok)
    elif g.router_score_bias:
        _add(out, f"{at}.gate.e_score_correction_bias", FP32, e)
    shared = g.num_shared_experts * g.moe_intermediate_size // tp
    _add(out, f"{at}.shared_experts.gate_up_proj.weight", LAYER, 2 * shared * h)
    _add(out, f"{at}.shared_experts.down_proj.weight", LAYER, shared * h)
    inter = g.moe_intermediate_size // tp
    _add(out, f"{at}.experts.routed_experts.w13_weight", LAYER, e * 2 * inter * h)
    _add(out, f"{at}.experts.routed_experts.w2_weight", LAYER, e * h * inter)


def v4_named_params(g: ModelGeometry, tp: int, layers: range | None = None,
                    first: bool = True, last: bool = True) -> Named:
    """One of `tp` ranks' parameters by name (the same on every rank): the whole model, or the
    pipeline stage holding decoder `layers` (the embedding on the `first`, the final norm and
    the LM head on the `last`, the ``hc_head`` mixes on every stage, as DeepseekV4Model builds
    them; tests/data/deepseek_v4/pp)."""
    v4 = g.v4
    assert v4 is not None
    h, m = g.hidden_size, v4.hc_mult
    mix = (2 + m) * m       # (the hyper-connections' pre, post and residual mixes)
    out: Named = {}
    _add(out, "model.hc_head_fn", FP32, m * m * h)
    _add(out, "model.hc_head_base", FP32, m)
    _add(out, "model.hc_head_scale", FP32, 1)
    if first:
        _add(out, "model.embed_tokens.weight", MODEL, vocab_rows(g, tp) * h)
    hash_layers = sum(v4.hash_moe_layers)
    for i, ratio in enumerate(v4.compress_ratios):
        if layers is not None and i not in layers:
            continue
        for part in ("attn", "ffn"):
            _add(out, f"model.layers.*.hc_{part}_fn", FP32, mix * m * h)
            _add(out, f"model.layers.*.hc_{part}_base", FP32, mix)
            _add(out, f"model.layers.*.hc_{part}_scale", FP32, 3)
            _add(out, f"model.layers.*.{part}_norm.weight", MODEL, h)
        _attention(g, v4, ratio, tp, out)
        _moe(g, i < hash_layers, tp, out)
    if last:
        _add(out, "model.norm.weight", MODEL, h)
        _add(out, "lm_head.weight", MODEL, vocab_rows(g, tp) * h)
    return out


def unmodelled(g: ModelGeometry) -> str:
    """Why kvcli does not estimate these weights ("": it does), so that `weights._ledger`
    refuses them while --num-blocks still sizes the cache: a quantised checkpoint (vLLM's
    DeepseekV4FP8Config: block-fp8 linears with e8m0 or float32 scales, MXFP4, NVFP4 or fp8
    experts) and the vision wrapper (common/vl_model.py: its tower, aligner and the experts'
    ``bias_vl``); a bf16 text-model count would be a quiet lie."""
    if g.architecture == VISION_WRAPPER:
        return f"the weights of {VISION_WRAPPER} (its vision tower and vision routing)"
    if g.quantization:
        return (f"DeepSeek-V4's weights under its quantization_config (quant_method "
                f"{g.quantization!r}: block-fp8 linears, fp4 or fp8 experts)")
    return ""


def v4_ledger(g: ModelGeometry, tp: int, layers: range | None = None, first: bool = True,
              last: bool = True) -> Ledger:
    """One of `tp` ranks' parameters by how they are held (`unmodelled` refused first), of the
    whole model or of a pipeline stage (`v4_named_params`)."""
    held = {LAYER: 0, MODEL: 0, FP32: 0, INT32: 0}
    for how, n in v4_named_params(g, tp, layers, first, last).values():
        held[how] += n
    return Ledger(model=held[MODEL], layer=held[LAYER], fp32=held[FP32], int32=held[INT32])
