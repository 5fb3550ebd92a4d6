"""The multi-token-prediction module vLLM 0.33 drafts with (method "mtp"): DeepSeek-V3's (and
V3.2's and GLM-5's: its layer with an indexer, `kvcore.models.sparse_mla`; GLM-4.7-Flash's and
openPangu's, its shape around their layer; LongCat-Flash's, a dense DeepSeek-V2 layer:
`longcat_mtp`), Qwen3-Next's and GLM-4.5's (4.5-Air, 4.6), ERNIE-4.5's (a Llama layer,
`ernie_mtp`), Step-3.5's (`kvcore.models.mtp_step3p5`) and GLM-OCR's (GLM-4.5's shape around
a dense Glm4DecoderLayer, without the target's tower). The draft is the target's own
checkpoint (`tests/data/sched_spec_mtp/DESIGN.md`).

vLLM rewrites a deepseek_v3 config into `DeepSeekMTPModel`, a qwen3_next one into
`Qwen3NextMTP` and a `Glm4MoeForCausalLM` into `Glm4MoeMTPModel` (class `Glm4MoeMTP`),
``n_predict`` = ``num_nextn_predict_layers`` (config/speculative.py:733-765, 848-857, 908-913),
and refuses method mtp for the other models kvcli reads ("Unsupported speculative
method: 'mtp'"). One module is run K times (deepseek_mtp.py:217, 231; qwen3_next_mtp.py:148;
glm4_moe_mtp.py's ``spec_step_idx % num_mtp_layers``), with vLLM's warning from K 2 (Step-3.5's
excepted: `reuse_warning`): the scheduler sees exactly EAGLE-3's rules. Several modules
(num_nextn_predict_layers n > 1) are all built, one layer each, whatever K; at K 1 one module
runs a step and the scheduler is single-module, which kvcli sizes for every class but
LongCat's (one layer whatever n), ERNIE's and Qwen3.5's (`SEVERAL_AT_K1`; tests/data/
weights_census/mtpmulti/, mtpmulti2/; Qwen3-Next's n layers behind its one fc, module i built
as layer i with that layer's feed-forward). From K 2 vLLM runs
multi-module MTP (`use_multi_module_mtp`: `num_prefill_lookahead_tokens` and
`num_hash_lookahead_tokens` K, K - 1 tokens re-prefillable and kept in sliding windows, a
scheduler block of at least K with prefix caching), not modelled: refused, saying so
(tests/data/sched_spec_mtp/probe_multi_module.out), and K above n not a multiple of it in
vLLM's words. Qwen3.5's `mtp_num_hidden_layers` > 1 builds as many draft layers, its scheduler
single-module (vLLM reads the other key): refused as not modelled. MiMo-V2's
checkpoints carry more modules, of which vLLM 0.33 builds the first only
(`_MIMO_V2_*_NUM_MTP_LAYERS` = 1); kvcli refuses MiMo-V2's module as not modelled.

What a module adds (`tests/data/mtp_draft/`, recorded from vLLM's modules): its attention
layer, named after the target's layers and equal to theirs but for `is_draft`, so it joins
the target's group (MLA for DeepSeek-V3: a block costs 62 of its 61-layer pages; full
attention for Qwen3-Next: 13 of its 12, and its 36 Gated DeltaNet layers are grouped by 13;
full attention for GLM-4.5-Air: 47 of its 46);
and its weights: a whole decoder layer (quantised as the target's), the fold of (embedding,
hidden state) 2 x hidden -> hidden, and three norms. DeepSeek-V3's fold is ``eh_proj``, a
plain linear on every worker, after the MLA decoder layer with the MoE; Qwen3-Next's is
``fc``, a ColumnParallelLinear split over the workers, before a full-attention decoder layer
with the sparse MoE (built as layer 0: MoE where the target's layer 0 is), with the
``pre_fc_norm_embedding``, ``pre_fc_norm_hidden`` and final norms. GLM-4.5's is DeepSeek's
shape: ``eh_proj`` a plain linear on every worker, ``enorm``, ``hnorm``, ``shared_head.norm``,
and a `Glm4MoeDecoderLayer` built as layer ``num_hidden_layers`` (MoE, its index past
``first_k_dense_replace``: the float32 router, q/k norms where ``use_qk_norm``), as the
target's last layer. The embedding and the LM head are the target's (vLLM shares them at load).
"""

from __future__ import annotations

from dataclasses import replace

from kvcore.errors import InputError
from kvcore.models.config_keys import MTP_KEYS
from kvcore.models.eagle_draft import DraftModel
from kvcore.models.geometry import ModelGeometry
from kvcore.models.modelopt_rank import at_prefix
from kvcore.models.mtp_fp8 import (
    draft_ignored,
    fp8_fold,
    modelopt_fold,
    module_prefix,
    qwen_ignored,
)
from kvcore.models.mtp_step3p5 import step3p5_mtp

FIELD = "spec_method"
# model_type -> vLLM's draft class
# (DeepSeek-V3.2's and GLM-5's: DeepSeek's module with its layer's indexer, whose two caches
# join the target's one group: tests/data/sparse_mla/mtp_answers.json)
MTP_CLASSES = {"deepseek_v3": "DeepSeekMTP", "deepseek_v32": "DeepseekV32MTP",
               "glm_moe_dsa": "DeepseekV32MTP", "qwen3_next": "Qwen3NextMTP",
               "glm4_moe": "Glm4MoeMTP", "qwen3_5_text": "Qwen3_5MTP",
               "qwen3_5_moe_text": "Qwen3_5MoeMTP",
               # (GLM-4.7-Flash's: DeepSeek's module shape around a GLM-4.7-Flash layer,
               # tests/data/sparse_mla/glm_lite_mtp_answers.json)
               "glm4_moe_lite": "Glm4MoeLiteMTP",
               # (openPangu's: DeepSeek's shape around an openPangu layer; LongCat-Flash's: a
               # DeepSeek-V2 layer with a dense MLP, `longcat_mtp`; tests/data/weights_census/
               # drafts_answers.json, mtp3/)
               "pangu_ultra_moe": "OpenPanguMTP", "longcat_flash": "LongCatFlashMTP",
               # (ERNIE-4.5's: a Llama decoder layer, `ernie_mtp`; drafts2/)
               "ernie4_5_moe": "ErnieMTP",
               # (Step-3.5's: its own layer and LM head, `kvcore.models.mtp_step3p5`)
               "step3p5": "Step3p5MTP",
               # (GLM-OCR's: GLM-4.5's shape around a dense Glm4DecoderLayer; its target's
               # tower is not the draft's: tests/data/weights_census/mm_ocr/mtp/)
               "glm_ocr_text": "GlmOcrMTP"}


def mtp_draft(target: ModelGeometry, k: int = 1) -> DraftModel:
    """The MTP draft of `target` drafting `k` tokens a step, or the InputError vLLM's refusal
    (or kvcli's) becomes."""
    if target.v4 is not None:   # (vLLM 0.33 builds it: config/speculative.py, nvidia/mtp.py)
        raise InputError(f"mtp with {target.name}: kvcli does not model DeepSeek-V4's MTP "
                         "module (vLLM 0.33's DeepSeekV4MTPModel), its caches and weights "
                         "unrecorded", field=FIELD)
    if target.layer_v_dims:     # (vLLM 0.33 builds its first module: speculative.py, mimo_v2_mtp)
        raise InputError(f"mtp with {target.name}: kvcli does not model MiMo-V2's MTP module "
                         "(vLLM 0.33's MiMoV2MTP), its caches and weights unrecorded",
                         field=FIELD)
    cls = MTP_CLASSES.get(target.model_type)
    if cls is None or (cls.startswith(("Deep", "Glm4MoeLite", "OpenPangu", "LongCat"))
                       and target.mla is None):
        raise InputError(f"mtp with {target.name} ({target.model_type or 'no model_type'}): "
                         "vLLM 0.33 refuses it, 'Unsupported speculative method: mtp' (kvcli "
                         "models DeepSeek-V3's, V3.2's, GLM-5's, Qwen3-Next's, Qwen3.5's, "
                         "GLM-4.5's, GLM-4.7-Flash's, openPangu's, LongCat-Flash's, "
                         "ERNIE-4.5's, Step-3.5's and GLM-OCR's MTP modules)",
                         field=FIELD)
    n = target.mtp_layers
    if n != 1 and not (n > 1 and k == 1 and cls in SEVERAL_AT_K1):
        raise InputError(f"mtp with {target.name}: it {_refusal(target, cls, n, k)}",
                         field=FIELD)
    h = target.hidden_size
    name = f"{target.name} MTP"
    if cls == "LongCatFlashMTP":
        return longcat_mtp(target, name)
    if cls == "ErnieMTP":
        return ernie_mtp(target, name)
    if cls == "Step3p5MTP":
        return step3p5_mtp(target, name, n)
    if cls.startswith("Qwen3"):
        # (a Qwen3NextDecoderLayer of type full_attention, prefix mtp.layers.0: layer 0's
        # feed-forward, MoE unless mlp_only_layers or decoder_sparse_step say otherwise;
        # Qwen3.5's Qwen3_5DecoderLayer: MoE or dense by model type, as every target layer)
        # (an fp8 target: `kvcore.models.mtp_fp8`, the ignore list under mtp.layers.0 and
        # the fc quantised unless listed)
        # (n modules at K 1, Qwen3-Next's: n such layers, built as layers 0 .. n - 1, each its
        # index's feed-forward, behind the one fc and its norms: `SEVERAL_AT_K1`)
        modules_moe = _qwen_module_moe(target, n)
        g = replace(target, name=name, layer_kinds=("full",) * n, moe_layers=modules_moe,
                    counted_moe_layers=sum(modules_moe), mtp_layers=0, vision_params=0,
                    vision_whole=0, vision_heads=0, fp8_ignored=qwen_ignored(target),
                    modelopt=at_prefix(target.modelopt, "model.layers", "mtp.layers"))
        fold = fp8_fold(target)     # (the fc built in fp8, or as ModelOpt's linears)
        modelopt = modelopt_fold(g)
        return DraftModel(name, "mtp", cls, g,
                          split_params=0 if fold or modelopt else 2 * h * h,
                          whole_params=3 * h, id_map_entries=0, lm_head_rows=target.vocab_size,
                          pass_split=2 * h * h, target=g, repeated=n, each_layer=True,
                          fp8=((h, 2 * h, "column"),) if fold else (),
                          modelopt_fc=None if modelopt is None else (modelopt, h, 2 * h))
    # DeepSeek's and GLM's: a decoder layer built as layer N, dense or MoE as the target's
    # last (both are MoE from first_k_dense_replace on; a GLM target with no MoE layer does
    # not build in vLLM: Glm4MoeForCausalLM's extract_moe_parameters needs one)
    last = target.layer_kinds[-1]
    moe = target.moe_layers[-1] if target.moe_layers else False
    if target.mla is not None and target.mla.indexer is not None:
        # (its layer keeps an indexer whatever IndexCache skips in the target's: vLLM's
        # is_mtp_layer, layer_id >= num_hidden_layers)
        target = replace(target, mla=replace(target.mla,
                                             indexer=target.mla.indexer.every_layer()))
    # (n modules at K 1: n such layers, each its own eh_proj and norms, `SEVERAL_AT_K1`)
    g = replace(target, name=name, layer_kinds=(last,) * n, moe_layers=(moe,) * n,
                counted_moe_layers=n * int(moe), mtp_layers=0, vision_params=0,
                vision_whole=0, vision_heads=0)
    # (its decoder layer is sized as the target's last, whose name an fp8 ignore list
    # reaches only where it names model.layers.N, the module's: `kvcore.models.mtp_fp8`)
    n_last = target.num_layers - 1
    built = replace(target, fp8_ignored=draft_ignored(target, module_prefix(target, False),
                                                      n_last),
                    modelopt=at_prefix(target.modelopt, f"model.layers.{n_last}",
                                       module_prefix(target, False)))
    return DraftModel(name, "mtp", cls, g, split_params=0,
                      whole_params=n * (2 * h * h + 3 * h), id_map_entries=0,
                      lm_head_rows=target.vocab_size, pass_whole=2 * h * h,
                      target=built, repeated=n)


# the drafts whose several modules kvcli sizes at K 1 (each module a layer, its weights and its
# cache: tests/data/weights_census/mtpmulti/); from K 2 vLLM runs them as multi-module MTP
SEVERAL_AT_K1 = ("DeepSeekMTP", "DeepseekV32MTP", "Glm4MoeLiteMTP", "OpenPanguMTP",
                 "Glm4MoeMTP", "Step3p5MTP", "Qwen3NextMTP")
# the drafts vLLM 0.33 does not warn about at K > 1 (config/speculative.py: its draft model
# types step3p5_mtp, step5_mtp and inkling_mtp; kvcli reads Step-3.5's only)
NO_REUSE_WARNING = ("Step3p5MTP",)


def reuse_warning(architecture: str, k: int) -> str | None:
    """vLLM 0.33's warning, word for word (its missing space kept), on drafting `k` tokens a
    step with MTP draft class `architecture` (as `mtp_draft` built it); None where it logs
    none (logged as SpeculativeConfig resolves the method, before anything else it says)."""
    if k <= 1 or architecture in NO_REUSE_WARNING:
        return None
    return ("Enabling num_speculative_tokens > 1 will run multiple times of forward on same "
            "MTP layer,which may result in lower acceptance rate")


def _refusal(target: ModelGeometry, cls: str, n: int, k: int) -> str:
    """Why kvcli refuses `target`'s `n` modules at K `k` (vLLM's words where vLLM refuses)."""
    key = MTP_KEYS.get(target.model_type, "num_nextn_predict_layers")
    if n == 0:
        return f"has no MTP module ({key} 0)"
    if cls.startswith("Qwen3_5"):
        # (vLLM's use_multi_module_mtp reads num_nextn_predict_layers, absent here, so its
        # scheduler runs single-module rules over n draft layers:
        # tests/data/sched_spec_mtp/probe_multi_module.out)
        return (f"has {n} MTP modules ({key}): vLLM 0.33 builds {n} draft attention layers, "
                "its scheduler single-module MTP's; the draft's several layers are not modelled")
    if k > n and k % n:
        # (SpeculativeConfig: K above n_predict must be a multiple of it)
        return (f"has {n} MTP modules: vLLM 0.33 refuses K {k}, 'num_speculative_tokens:{k} "
                f"must be divisible by n_predict={n}'")
    # (LongCat's predictor builds one layer whatever the key says)
    layers_built = "one draft layer" if cls == "LongCatFlashMTP" else f"{n} draft layers"
    return (f"has {n} MTP modules: vLLM 0.33 builds {layers_built} and with K >= 2 runs "
            f"multi-module MTP (prefill and block-hash lookaheads of K tokens, K - 1 "
            "re-prefillable, a scheduler block of at least K with prefix caching), which "
            "kvcli does not model" + ("" if cls == "LongCatFlashMTP" or cls not in SEVERAL_AT_K1
                                      else f" (K 1 is sized: {n} modules, one step each)"))


def _qwen_module_moe(target: ModelGeometry, n: int) -> tuple[bool, ...]:
    """Which of Qwen3-Next's (Qwen3.5's) `n` modules are MoE: vLLM builds module i as decoder
    layer i (its prefix's index), MoE where the target's layer i is (qwen3_next.py: by
    mlp_only_layers and decoder_sparse_step)."""
    if n > target.num_layers:
        raise InputError(f"mtp with {target.name}: its {n} MTP modules outnumber its "
                         f"{target.num_layers} layers, whose feed-forward kinds kvcli reads "
                         "for them; not modelled", field=FIELD)
    return target.moe_layers[:n] if target.moe_layers else (False,) * n


def longcat_mtp(target: ModelGeometry, name: str) -> DraftModel:
    """LongCat-Flash's module (longcat_flash_mtp.py): one DeepSeek-V2 decoder layer, whatever
    the config's module count, built with n_routed_experts cleared, so its feed-forward is a
    dense MLP ``ffn_hidden_size`` wide (not LongCat's two attentions, two MLPs and MoE), one
    MLA attention whose cache joins the target's; ``eh_proj`` a replicated linear, ``enorm``,
    ``hnorm`` and ``final_layernorm``. Its embedding and LM head are the target's after load.
    The layer is sized as a one-layer DeepSeek-V3 of the target's shapes (`target` below).
    Under an fp8 target's quant_config (the only quantisation kvcli sizes for LongCat) the
    eh_proj too is fp8 with its block scales (drafts_answers.json, drafts/longcat-flash-l2-fp8).
    """
    h = target.hidden_size
    layer = replace(target, name=name, model_type="deepseek_v3", layer_kinds=("mla",),
                    moe_layers=(False,), counted_moe_layers=0, num_experts=0,
                    zero_experts=0, mtp_layers=0, router_score_bias=False)
    fp8 = target.quantization == "fp8"
    return DraftModel(name, "mtp", "LongCatFlashMTP", layer, split_params=0,
                      whole_params=(0 if fp8 else 2 * h * h) + 3 * h, id_map_entries=0,
                      lm_head_rows=target.vocab_size, pass_whole=2 * h * h,
                      target=layer, repeated=1, fp8=((h, 2 * h, "replicated"),) if fp8 else ())


def ernie_mtp(target: ModelGeometry, name: str) -> DraftModel:
    """ERNIE-4.5's module (ernie_mtp.py, class ErnieMTP): a `LlamaDecoderLayer` of the target's
    config, so a dense MLP ``intermediate_size`` wide (no experts) and full attention whose
    cache joins the target's group; ``mtp_linear_proj`` a plain 2h -> h linear on every worker
    and two norms (``mtp_emb_norm``, ``mtp_hidden_norm``; no final one). Its embedding and LM
    head are the target's after load; its RoPE cache its own (llama.py's get_rope neox-style,
    the target's interleaved: 131,072 x 128 x 2 B beside ERNIE-4.5-21B's; drafts2/)."""
    h = target.hidden_size
    layer = replace(target, name=name, layer_kinds=("full",), moe_layers=(False,),
                    counted_moe_layers=0, mtp_layers=0, rope_caches=tuple(
                        c._replace(key=c.key + " neox") for c in target.rope_caches))
    return DraftModel(name, "mtp", "ErnieMTP", layer, split_params=0,
                      whole_params=2 * h * h + 2 * h, id_map_entries=0,
                      lm_head_rows=target.vocab_size, pass_whole=2 * h * h,
                      target=layer, repeated=1)
