"""How vLLM 0.33 reads the config keys the KV geometry and perf.py's counts share: its key
aliases (the first given wins), Falcon's multi-query head, the MoE and sliding layers perf.py
bills, and the Qwen family's sliding windows (`qwen_kinds`). `hf_config.read_hf_config` calls
these with its own ``get`` (the key, else the config class's default)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

# vLLM 0.33's CONFIG_FIELD_ALIASES (transformers_utils/config.py:56), first found wins; Ernie 4.5's
# config class maps num_experts / num_experts_per_tok onto moe_num_experts / moe_k
KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                "num_attention_groups")
EXPERT_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
# The MTP modules (num_nextn_predict_layers) when a config omits the key, for the model types
# kvcli drafts with (`kvcore.models.mtp_draft`): transformers 5.20's DeepseekV3Config maps its
# num_mtp_layers (default 1) onto the key, and vLLM loads deepseek_v32 with that class too
# (weights_census/drafts_answers.json, mtp_draft/18: one DeepSeekMTP layer; kvcli read 0 and
# refused); GlmMoeDsaConfig has no such key; Qwen3-Next's has none, and vLLM's
# Qwen3NextMultiTokenPredictor builds getattr(..., 1); GLM-4.5's Glm4MoeConfig maps its
# num_mtp_layers (default 1) onto the key (tests/data/mtp_draft/glm4_moe_answers.json, case 8)
MTP_MODULES = {"deepseek_v3": 1, "deepseek_v32": 1, "glm_moe_dsa": 0, "qwen3_next": 1,
               "glm4_moe": 1, "qwen3_5_text": 1, "qwen3_5_moe_text": 1,
               # (GLM-4.7-Flash's Glm4MoeLiteConfig has no such key: without one, no module)
               "glm4_moe_lite": 0,
               # (LongCat-Flash's module count vLLM reads with a default of 1, and its
               # predictor builds 1 whatever it says; openPangu's remote class is read as given:
               # vLLM's predictor reads the key, so a config without it builds none)
               "longcat_flash": 1, "pangu_ultra_moe": 0,
               # (ERNIE-4.5's Ernie4_5_MoeConfig has no such key, and vLLM's ErnieMTP reads
               # it: without one, no module; weights_census/drafts2/)
               "ernie4_5_moe": 0,
               # (Step-3.5's Step3p7TextConfig defaults it to 0, which its predictor builds)
               "step3p5": 0,
               # (GLM-OCR's GlmOcrTextConfig has no such key; its predictor reads the text
               # config's: weights_census/mm_ocr/mtp/)
               "glm_ocr_text": 0}
# Qwen3.5 counts them in its own key (vLLM's Qwen3_5MultiTokenPredictor builds
# getattr(config, "mtp_num_hidden_layers", 1); config/speculative.py's n_predict reads it)
MTP_KEYS = {"qwen3_5_text": "mtp_num_hidden_layers", "qwen3_5_moe_text": "mtp_num_hidden_layers"}
PER_TOKEN_KEYS = ("num_experts_per_tok", "moe_k", "num_experts_per_token", "top_k_experts",
                  "moe_topk", "moe_top_k", "top_k")


def kv_heads_of(c: dict[str, Any], model_type: str, heads: int, get, get_dim) -> int:
    """ModelConfig.get_total_num_kv_heads: the first alias given. Falcon as falcon.py builds
    its attention: the new decoder architecture's ``num_kv_heads`` (FalconConfig's default:
    every head), else one KV head under ``multi_query`` (its default), else every head."""
    if model_type == "falcon":
        if get("new_decoder_architecture", False):
            return get_dim("num_kv_heads", heads)
        return 1 if get("multi_query", True) else heads
    key = next((k for k in KV_HEAD_KEYS if c.get(k) is not None), "num_key_value_heads")
    return get_dim(key, heads)


def head_dim_of(c: dict[str, Any], model_type: str, hidden: int, heads: int, get_dim,
                source: str) -> int:
    """``head_dim``, else hidden_size / num_attention_heads. Falcon's is a property with no
    setter in FalconConfig: a config that sets it does not load (transformers, so vLLM).
    `HIDDEN_OVER_HEADS_TYPES` read no ``head_dim`` at all."""
    if model_type == "falcon" and c.get("head_dim") is not None:
        raise InputError("Falcon's head size is hidden_size / num_attention_heads: transformers "
                         "cannot load a config that sets it (vLLM refuses it)",
                         path=source or None, field="head_dim")
    if model_type in HIDDEN_OVER_HEADS_TYPES:
        return hidden // heads
    return int(get_dim("head_dim") or hidden // heads)


# Model types whose vLLM file sizes a head hidden_size / num_attention_heads whatever
# ``head_dim`` says (internlm2.py's InternLM2Attention; InternLM2Config has the key: a config
# that sets it apart caches hidden / heads a head). Found by tests/data/size_fuzz (seed 2)
HIDDEN_OVER_HEADS_TYPES = ("internlm2",)


def experts_per_tok(c: dict[str, Any], get, get_int) -> int:
    """ModelConfig.get_num_experts_per_tok: the first alias given (a list: its largest)."""
    key = next((k for k in PER_TOKEN_KEYS if c.get(k) is not None), "num_experts_per_tok")
    v = get(key)
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return max(v, default=0)
    return get_int(key, 0) or 0


# Model types whose vLLM 0.33 layers never read ``sliding_window`` (mistral.py's are llama.py's,
# which slide only where ``layer_types`` says so, as phi3.py's and the Transformers backend's
# that serves StarCoder2, transformers/base.py:691-693; mixtral.py names no window): every
# layer attends fully whatever the key says (Mistral-7B-v0.1's 4,096, Phi-3-mini's 2,047,
# StarCoder2-15B's 4,096), though vLLM's perf.py bills every layer at that window (`perf_swa`).
# Found by the KV-spec census (tests/data/kv_spec_census/); llama itself too (llama.py:185-204,
# the text model Voxtral's and other wrappers' text_config name; Phi-3-vision's phi3_v and
# Phi-4-multimodal's phi4mm, which phi3v.py and phi4mm.py build as Llama:
# tests/data/weights_census/mm_minicpm_idefics_phi/).
NO_WINDOW_TYPES = ("llama", "mistral", "mixtral", "phi3", "starcoder2", "phi3_v", "phi4mm")


def perf_swa(c: dict[str, Any], model_type: str, n: int, get) -> tuple[int, int] | None:
    """(sliding layers, window) as vLLM 0.33's perf.py bills them for the Qwen family and
    NO_WINDOW_TYPES, where they need not be the KV layers' (`qwen_kinds`): perf.py reads the
    config's window and counts its ``layer_types``' sliding entries (given, or as transformers
    derives them; without any, every layer), where the attention layers may have no window at
    all. None: the KV kinds' count and window."""
    if model_type in NO_WINDOW_TYPES and c.get("layer_types") is None:
        # ("Full SWA model (e.g. Mistral ...)": perf.py:430-447, every layer at the window)
        # (an explicit null is the config class's None, not its default)
        window = c["sliding_window"] if "sliding_window" in c else get("sliding_window")
        valid = isinstance(window, int) and not isinstance(window, bool) and window > 0
        return (n, window) if valid else None
    if model_type not in QWEN_WINDOWS:
        return None
    window = get("sliding_window") if get("use_sliding_window", False) else None
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        return (0, 0)
    first = get("max_window_layers", 28)
    types = c.get("layer_types")
    if isinstance(types, list):
        count = sum(isinstance(t, str) and "sliding" in t.lower() for t in types[:n])
    elif not isinstance(first, int) or model_type == "qwen3_moe":
        count = n
    elif model_type == "qwen2_moe":
        count = sum(i % 2 == 0 and i < first for i in range(n))
    else:
        count = sum(i >= first for i in range(n))
    return (count, window)


# Model types whose decoder layer is MoE unless ``mlp_only_layers`` lists it or its index + 1 is
# not a multiple of ``decoder_sparse_step`` (vLLM 0.33's qwen2_moe.py, qwen3_moe.py,
# qwen3_next.py, k2_horizon.py; checked per rank: tests/data/weights_census/*-sparse.config.json,
# weights_census/k2_horizon/; Qwen3-VL-MoE's text model, qwen3_vl_moe.py's decoder layer being
# Qwen3-MoE's: tests/data/moe_stages/qwen3-vl-moe-mlp-only)
SPARSE_STEP_TYPES = ("qwen2_moe", "qwen3_moe", "qwen3_next", "k2_horizon", "qwen3_vl_moe_text")


def sparse_step_layers(get, get_dim, n: int, source: str) -> tuple[bool, ...]:
    """Which of the ``n`` layers are MoE, by ``mlp_only_layers`` and ``decoder_sparse_step``."""
    dense = get("mlp_only_layers") or []
    if not isinstance(dense, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                              for i in dense):
        raise InputError(f"expected a list of layer indices, got {clipped(repr(dense))}",
                         path=source or None, field="mlp_only_layers")
    step = get_dim("decoder_sparse_step", 1)
    return tuple(i not in dense and (i + 1) % step == 0 for i in range(n))


def counted_moe_layers(get, n: int, num_experts: int) -> int:
    """The MoE layers vLLM 0.33's perf.py bills: all of them when the model has experts, those
    with (i + 1) % interleave_moe_layer_step == 0 (Llama 4), or those with
    i >= first_k_dense_replace and i % moe_layer_freq == 0 (DeepSeek)."""
    count = n if num_experts else 0
    step = get("interleave_moe_layer_step")
    if isinstance(step, int) and step > 0:
        count = sum((i + 1) % step == 0 for i in range(n))
    freq, first = get("moe_layer_freq"), get("first_k_dense_replace")
    if isinstance(freq, int) and freq > 0 and isinstance(first, int):
        count = sum(i >= first and i % freq == 0 for i in range(n))
    return count



# Model types whose vLLM attention takes its window from CacheConfig.sliding_window only
QWEN_WINDOWS = ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "dots_ocr")
# (dots.ocr's: its DotsOCRConfig is a Qwen2Config, its language model Qwen2ForCausalLM)
QWEN_DENSE = ("qwen2", "qwen3", "dots_ocr")


def qwen_kinds(model_type: str, n: int, get, explicit: tuple[str, ...] | None,
               source: str) -> tuple[str, ...]:
    """Qwen2, Qwen3 and their MoE models: their attention reads CacheConfig.sliding_window,
    which vLLM sets only where the config's ``layer_types`` are absent or all sliding
    (engine/arg_utils.py:2288-2294). transformers gives a window only with
    ``use_sliding_window`` (false by default: a config that leaves it out attends fully) and
    derives ``layer_types``: Qwen2 and Qwen3 slide from ``max_window_layers`` on (28 by
    default), Qwen2-MoE on even layers below it, Qwen3-MoE derives none. All sliding: every
    layer slides; none, or mixed on an MoE model: every layer attends fully; mixed on Qwen2 or
    Qwen3: vLLM asserts ``max_window_layers == num_hidden_layers`` (qwen2.py:351) and, where it
    holds, attends fully."""
    if not get("use_sliding_window", False) or not get("sliding_window"):
        return ("full",) * n        # (Qwen2-MoE's window 0 is vLLM's "none" too)
    first = get("max_window_layers", 28)
    if not isinstance(first, int) or isinstance(first, bool):
        raise InputError(f"expected an integer, got {first!r}", path=source or None,
                         field="max_window_layers")
    if explicit is not None:
        types = explicit
    elif model_type in QWEN_DENSE:
        types = tuple("sliding" if i >= first else "full" for i in range(n))
    elif model_type == "qwen2_moe":
        types = tuple("sliding" if i % 2 == 0 and i < first else "full" for i in range(n))
    else:
        return ("sliding",) * n
    if all(k == "sliding" for k in types):
        return ("sliding",) * n
    if model_type in QWEN_DENSE and "sliding" in types and first != n:
        raise InputError(f"sliding-window attention on some layers only (max_window_layers "
                         f"{first!r} of {n} layers): vLLM 0.33 refuses it (qwen2.py: \"Sliding "
                         "window for some but all layers is not supported\")",
                         path=source or None, field="max_window_layers")
    return ("full",) * n


def shared_width(get_int, model_type: str = "") -> int:
    """The shared experts' MLP width where the config names one (0: none named): Qwen2-MoE's and
    Qwen3-Next's ``shared_expert_intermediate_size``, Granite 4.0-H's ``shared_intermediate_size``
    (`granitemoehybrid.py`'s shared MLP), Nemotron-H's
    ``moe_shared_expert_intermediate_size`` times ``n_shared_experts`` (`nemotron_h.py` builds
    them as one MLP so wide), Aria's ``intermediate_size`` times ``moe_num_shared_experts``
    (aria.py's `AriaTextMoELayer`: one LlamaMLP so wide; kvcli missed it), HunYuan-MoE's
    ``intermediate_size`` (transformers' HunYuanMoEV1Moe on vLLM's Transformers backend: a
    shared_mlp beside its experts in every layer, whatever num_shared_expert says)."""
    width = (get_int("shared_expert_intermediate_size", 0)
             or get_int("shared_intermediate_size", 0) or 0)   # (Granite's MoE hybrids)
    if not width:
        width = (get_int("moe_shared_expert_intermediate_size", 0) or 0) * (
            get_int("n_shared_experts", 0) or 0)
    if model_type == "aria_text":
        width = (get_int("intermediate_size", 0) or 0) * (
            get_int("moe_num_shared_experts", 0) or 0)
    if model_type == "hunyuan_v1_moe":
        width = get_int("intermediate_size", 0) or 0
    return width
