"""The linears an fp8 checkpoint leaves unquantised: those its ``quantization_config`` names in
``ignored_layers`` (else ``modules_to_not_convert``), matched as vLLM 0.33 matches them
(Fp8Config.get_quant_method, quantization/utils/quant_utils.py is_layer_skipped, "exact" mode).

A linear's vLLM module path (``model.layers.3.self_attn.qkv_proj``) is skipped when the list
holds it exactly: a prefix (``model.layers.1.mlp``) skips nothing. A fused linear (the model's
``packed_modules_mapping``: ``qkv_proj`` of q/k/v_proj, ``gate_up_proj`` of gate/up_proj,
Qwen3.5's ``in_proj_qkvz`` of in_proj_qkv/in_proj_z and ``in_proj_ba`` of in_proj_b/in_proj_a)
is skipped when the list names it, or all of its checkpoint shards; some but not all shards
and vLLM refuses to build the model, at every TP. A skipped linear is built by
UnquantizedLinearMethod: its weight in the model dtype, no block scales, no block-shape check.
The LM head and the embeddings are never fp8 (not LinearBase), so naming them changes nothing;
nor do the attention layers' q/k/v/prob scales (Fp8KVCacheMethod takes no skip list).

A linear whose path holds "experts" and is not fused (the routed experts, DeepSeek's and
Nemotron-H's shared experts' down_proj) is skipped when its path lies inside a listed name
holding "experts": ``model.layers.2.mlp.experts`` names layer 2's routed experts.

Checked against vLLM on Qwen3.5, Qwen3-Next, Nemotron-H and Jamba (tests/data/weights_census/fp8/,
the ``-skip`` configs). The list is matched after the renames vLLM applies to it first
(`kvcore.models.fp8_renames`: Qwen3.5's checkpoint names ``model.language_model.layers.N``).
"""

from __future__ import annotations

from functools import partial

from kvcore.models import fp8_scales as fp8
from kvcore.models.classic_paths import PATHS, layer_paths
from kvcore.models.fused_shards import all_or_none, named_in_part
from kvcore.models.geometry import ModelGeometry
from kvcore.models.text_paths import vllm_text_path

_QKV = {"qkv_proj": ("q_proj", "k_proj", "v_proj")}
_GATE_UP = {"gate_up_proj": ("gate_proj", "up_proj")}
# packed_modules_mapping of each model class (qwen3_5.py, qwen3_next.py, nemotron_h.py,
# deepseek_v2.py, jamba.py); others: the Llama-style two
_FUSED: dict[str, dict[str, tuple[str, ...]]] = {
    "qwen3_5": {**_QKV, **_GATE_UP, "in_proj_qkvz": ("in_proj_qkv", "in_proj_z"),
                "in_proj_ba": ("in_proj_b", "in_proj_a")},
    "qwen3_next": {**_QKV, **_GATE_UP, "in_proj_qkvz": ("in_proj_qkvz",),
                   "in_proj_ba": ("in_proj_ba",)},
    "nemotron_h": dict(_QKV),
    "deepseek": {**_GATE_UP, "fused_qkv_a_proj": ("q_a_proj", "kv_a_proj_with_mqa")},
    "jamba": {**_QKV, **_GATE_UP, "in_proj": ("in_proj",)},
    "lfm2": {**_QKV, "w13": ("w1", "w3"), "in_proj": ("in_proj",)},
    # (the pre-Llama decoders': opt.py's, falcon.py's, chatglm.py's; none in gpt2.py,
    # gpt_j.py, bloom.py, stablelm.py; the Transformers backend's fuser gives Phi's and
    # StarCoder2's, and none to GPT-NeoX's and GPTBigCode's one QKV module)
    "opt": dict(_QKV), "stablelm": {}, "phi": dict(_QKV), "starcoder2": dict(_QKV),
    "gpt_neox": {}, "gpt_bigcode": {},
    "falcon": {"query_key_value": ("query_key_value",)},
    "chatglm": {"query_key_value": ("query_key_value",), "dense_h_to_4h": ("dense_h_to_4h",)},
    "gpt2": {}, "gptj": {}, "bloom": {},
}
_LFM2_TYPES = ("lfm2", "lfm2_moe")
_LFM2_NAMES = {"o_proj": "out_proj", "gate_up_proj": "w13", "down_proj": "w2"}
# vLLM's names for kvcli's linears where a class names them otherwise (lfm2.py, lfm2_moe.py:
# Lfm2MLP's w13 and w2, the attention's out_proj; dbrx.py: DbrxAttention's Wqkv, out_proj)
_NAMES = {"lfm2": _LFM2_NAMES, "lfm2_moe": _LFM2_NAMES,
          "dbrx": {"qkv_proj": "Wqkv", "o_proj": "out_proj"}}
# (DBRX's decoder layers: DbrxModel's blocks under the model's transformer)
# (Step3's: Step3TextModel takes its class's prefix, "" in the text class, whose layers are
# then ".layers.N", as vLLM's words name them)
_LAYERS = {"dbrx": "transformer.blocks", "step3_text": ".layers"}


def _family(g: ModelGeometry) -> str:
    if g.model_type.startswith("qwen3_5"):
        return "qwen3_5"
    if g.model_type in _LFM2_TYPES:
        return "lfm2"
    if g.mla is not None:
        return "deepseek"
    return g.model_type


def fused_of(g: ModelGeometry) -> dict[str, tuple[str, ...]]:
    return _FUSED.get(_family(g), {**_QKV, **_GATE_UP})


def block_names(g: ModelGeometry, moe: bool) -> tuple[str, str, str]:
    """The module a layer's attention, mixer and MLP (its shared expert) linears sit under."""
    t = g.model_type
    if t == "nemotron_h":
        return "mixer", "mixer", "mixer.shared_experts" if moe else "mixer"
    if t == "jamba":
        # (its attention's projections hang off the layer itself: model.layers.N.qkv_proj)
        return "", "mixer", "feed_forward"
    if t in _LFM2_TYPES:
        return "self_attn", "short_conv", "feed_forward"
    if t == "dbrx":
        return "norm_attn_norm.attn", "mixer", "ffn"
    if t == "step3_text":   # (its shared expert beside the MoE block: layers.N.share_expert)
        return "self_attn", "mixer", "share_expert" if moe else "mlp"
    if t == "step3p5":      # (its shared expert inside the MoE block)
        return "self_attn", "mixer", "moe.share_expert" if moe else "mlp"
    mixer = "linear_attn" if g.mamba is not None and g.mamba.version == "gdn" else "mixer"
    if not moe:
        return "self_attn", mixer, "mlp"
    # (GLM-4.5's Glm4MoE and K2-Horizon name their shared expert as DeepSeek does; Qwen's is
    # singular)
    plural = g.mla is not None or g.model_type in ("glm4_moe", "k2_horizon")
    return "self_attn", mixer, "mlp.shared_experts" if plural else "mlp.shared_expert"


def linear_path(g: ModelGeometry, i: int, block: str, name: str) -> str:
    """Layer `i`'s linear `name` (as `kvcore.models.fp8_scales` names it) under `block`, by
    its vLLM module path."""
    name = _NAMES.get(g.model_type, {}).get(name, name)
    return ".".join(p for p in (layers_path(g), str(i), block, name) if p)


def layers_path(g: ModelGeometry) -> str:
    """The module holding the decoder layers (``model.layers``; DBRX's ``transformer.blocks``)."""
    return _LAYERS.get(g.model_type, "model.layers")


def experts_path(g: ModelGeometry, i: int) -> str:
    """The routed experts' module (RoutedExperts' prefix; Mixtral's MoE block is
    ``block_sparse_moe``, mixtral.py)."""
    if g.model_type == "dbrx":
        return f"{layers_path(g)}.{i}.ffn"     # (DbrxMoE gives its own prefix to its experts)
    block = {"nemotron_h": "mixer", "jamba": "feed_forward", "lfm2_moe": "feed_forward",
             "mixtral": "block_sparse_moe", "step3_text": "moe", "step3p5": "moe"}.get(
                 g.model_type, "mlp")
    return f"{layers_path(g)}.{i}.{block}.experts"


def gate_path(g: ModelGeometry, i: int) -> str:
    """A MoE router's module: beside the experts (``mlp.gate``; LFM2-MoE's ``feed_forward``),
    not under the shared expert, which `block_names` gives for a MoE layer's MLP."""
    return f"model.layers.{i}.{'feed_forward' if g.model_type == 'lfm2_moe' else 'mlp'}.gate"


def skipped(g: ModelGeometry, path: str) -> bool:
    """Whether vLLM builds the linear at `path` unquantised; InputError where the list names
    some but not all shards of a fused linear."""
    ignored = g.fp8_ignored
    fused = fused_of(g)
    proj = path.split(".")[-1]
    if proj not in fused and "experts" in path:
        # (the routed experts, and a shared expert's unfused linears: the path inside a
        # listed name that holds "experts", model.layers.2.mlp.experts)
        return any(path in x for x in ignored if "experts" in x)
    if proj not in fused or path in ignored:
        return path in ignored
    shards = [path.replace(proj, s) for s in fused[proj]]
    written = dict(zip(g.fp8_ignored, g.fp8_ignored_written, strict=False))
    named = [s in ignored for s in shards]
    return all_or_none(named, partial(named_in_part, written, shards, named, fused[proj]),
                       vllm_text_path(g.architecture, path), g.source,
                       f"quantization_config.{g.fp8_ignored_key}")


def layer_skips(g: ModelGeometry, i: int, kind: str, moe: bool) -> frozenset[str]:
    """The names (as `kvcore.models.fp8_scales` gives them) of layer `i`'s unquantised linears."""
    if not g.fp8_ignored:
        return frozenset()
    attn, mixer, mlp = block_names(g, moe)
    out = set()
    groups = ((attn, fp8.attention_linears(g, 1) if kind not in ("mamba", "mlp") else []),
              (mixer, fp8.mixer_linears(g, 1) if kind in ("mamba", "parallel") else []),
              (mlp, fp8.mlp_linears(g, 1, 1, gated=g.model_type != "nemotron_h")))
    for block, linears in groups:
        for name, *_ in linears:
            if skipped(g, linear_path(g, i, block, name)):
                out.add(name)
    if moe and g.model_type in fp8.QUANTISED_GATES and skipped(g, gate_path(g, i)):
        out.add("gate")
    if moe and g.num_experts and skipped(g, experts_path(g, i)):
        out.add("experts")   # (UnquantizedFusedMoEMethod: the model dtype, no scales)
    return frozenset(out)


def check(g: ModelGeometry) -> None:
    """vLLM's refusal of a list naming part of a fused linear, before anything is sized."""
    if g.classic is not None:
        for i in range(len(g.layer_kinds) if g.model_type in PATHS and g.fp8_ignored else 0):
            for path in layer_paths(g, i):
                skipped(g, path)
        return
    for i, kind in enumerate(g.layer_kinds):
        layer_skips(g, i, kind, g.moe_layers[i] if i < len(g.moe_layers) else False)
