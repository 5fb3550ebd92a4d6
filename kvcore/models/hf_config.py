"""Read a Hugging Face `config.json` (from disk or a preset dict) into a `ModelGeometry`.

What decides each layer's kind, in this order (as vLLM's model code reads it):
* ``layer_types`` ("full_attention", "sliding_attention", "chunked_attention", "mamba",
  "attention"), when present;
* Gemma-3 without ``layer_types``: ``sliding_window_pattern`` P (layer i slides unless
  (i+1) % P == 0); Cohere2 (Command R7B, Command A) the same with P defaulting to 4, and vLLM
  gives its sliding layers a window of ``sliding_window + 1`` (commandr.py: the training
  convention); Gemma 2 without ``layer_types``: even layers slide (transformers' default);
* gpt-oss without ``layer_types``: even layers slide;
* Llama 4: ``attention_chunk_size`` with ``no_rope_layers`` (chunked local attention on RoPE
  layers, full attention on NoPE layers, where the flag is 0; both filled in as transformers
  does: `kvcore.models.llama4`);
* Jamba: ``attn_layer_period``/``attn_layer_offset`` (attention where i % period == offset,
  Mamba elsewhere);
* Qwen2, Qwen3 and their MoE models: the window vLLM's CacheConfig gets, or none
  (`config_keys.qwen_kinds`);
* otherwise a ``sliding_window`` (unless ``use_sliding_window`` is false) makes every layer
  slide, else every layer is full attention.
DeepSeek-V2/V3 and Kimi-K2 (``model_type`` deepseek_v2, deepseek_v3, kimi_k2 with a
``kv_lora_rank``) are read as vLLM serves them, with multi-head latent attention: every layer
``mla`` (`kvcore.models.mla`). The other model types vLLM serves with MLA are refused by name, and
so are the architectures with recurrent or linear-attention layers kvcli does not model
(`kvcore.models.unsupported`).
Qwen3-Next (``qwen3_next``): Gated DeltaNet layers as Mamba states (`kvcore.models.qwen3_next`);
Qwen3.5 (``qwen3_5_text``, ``qwen3_5_moe_text``, or a wrapper's ``text_config``) the same, with
its own state dtypes, feed-forward and vision tower (`kvcore.models.qwen3_5`).
Falcon-H1 (``falcon_h1``): every layer ``parallel``, attention and a Mamba2 mixer side by side.
Zamba2 (``zamba2``): Mamba2 layers, the ``hybrid`` ones ``parallel`` with a use of a shared
attention block, a KV cache each use (`kvcore.models.zamba2`).
Nemotron-H (``nemotron_h``): ``hybrid_override_pattern`` (or ``layers_block_type``), one mixer a
layer: Mamba2, attention, or a feed-forward layer with no KV cache (kind ``mlp``;
`kvcore.models.nemotron_h`).
A multimodal config's ``text_config`` is read in place of the top level; its ``vision_config``
sizes the vision tower vLLM builds beside it (Qwen3.5's, Gemma 3's SigLIP: the weights only).
Missing keys that the model's own config class defaults are filled from `class_defaults`; a key the
geometry needs that is neither given nor defaulted is an InputError naming it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from kvcore.errors import InputError
from kvcore.models import (
    fp8_ignored,
    int_quant_rank,
    kv_sharing,
    minicpmo,
    minicpmv,
    modelopt_rank,
    quant_unsized,
)
from kvcore.models.attention_extras import QK_NORM_TYPES, USE_QK_NORM_TYPES, attention_biased
from kvcore.models.buffers import buffer_fields
from kvcore.models.class_defaults import CLASS_DEFAULTS, MODEL_TYPE_DEFAULTS
from kvcore.models.classic_blocks import classic_block
from kvcore.models.config_aliases import MAX_LAYERS
from kvcore.models.config_keys import (
    EXPERT_KEYS,
    MTP_KEYS,
    MTP_MODULES,
    SPARSE_STEP_TYPES,
    counted_moe_layers,
    experts_per_tok,
    head_dim_of,
    kv_heads_of,
    perf_swa,
    shared_width,
    sparse_step_layers,
)
from kvcore.models.context_limit import lengths
from kvcore.models.deepseek_v4 import V4_KIND
from kvcore.models.dtypes import config_dtype
from kvcore.models.encoder_only import is_causal_refusal
from kvcore.models.ernie45 import text_keys
from kvcore.models.family_fields import family_fields
from kvcore.models.fp8_renames import architecture
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hybrid_class import hybrid_mamba
from kvcore.models.interns1_pro import fope_freqs
from kvcore.models.internvl_chat import llm_refusal
from kvcore.models.isaac import ISAAC_TEXT, isaac_head, isaac_rope
from kvcore.models.jamba import jamba_layout
from kvcore.models.keye_tower import KEYE_TEXT
from kvcore.models.layer_kinds import layer_kinds
from kvcore.models.llama4 import EXPERTS_DEFAULT, MLP_WIDTH_DEFAULT, llama4_moe_layers
from kvcore.models.mamba_only import MAMBA_ONLY_TYPES, read_mamba_only
from kvcore.models.mimo_v2 import WINDOW_KEYS
from kvcore.models.mistral_format import params_json_refusal
from kvcore.models.mla import read_mla
from kvcore.models.mm_prefix import atomic_items
from kvcore.models.nemotron_h import nemotron_h_layers
from kvcore.models.openpangu import PANGU_ULTRA_MOE, pangu_rope_keys
from kvcore.models.perf_widths import perf_intermediate
from kvcore.models.quant_fields import quant_fields
from kvcore.models.qwen3_5 import GDN_TYPES, text_model_type
from kvcore.models.text_config import model_name, text_config, text_model, text_path
from kvcore.models.text_key_paths import named_by_path
from kvcore.models.unsupported import refusal
from kvcore.models.vision_towers import vision_tower
from kvcore.models.zamba2 import ZAMBA2, as_built
from kvcore.sources import read_json


def load_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``; an InputError when it cannot be read or is not an object."""
    name, data = read_json(str(path))
    if not isinstance(data, dict):
        # (the same words for hf_quant_config.json, read here too: "a config.json" misnamed it)
        kind = ("null" if data is None else "an array" if isinstance(data, list) else
                "a string" if isinstance(data, str) else
                "a boolean" if isinstance(data, bool) else "a number")
        raise InputError(f"must hold a JSON object, got {kind}", path=name)
    return data


@named_by_path      # (a wrapper's text keys by their path: text_config.num_key_value_heads)
def read_hf_config(cfg: dict[str, Any], *, name: str = "", source: str = "") -> ModelGeometry:
    """The geometry of a Hugging Face config dict (``source`` names it in error messages)."""
    params_json_refusal(cfg, source)    # (a Mistral-format checkpoint's: not read)
    # (before the thinker and language_config are looked up by it: a dict there was unhashable)
    if (refused := refusal(cfg.get("architectures"), cfg.get("model_type"))) is not None:
        raise InputError(refused[1], path=source or None, field=refused[0])
    cfg, c = text_model(cfg, source)     # (an omni model's thinker, a wrapper's text config)
    model_type = shown = text_model_type(cfg, c.get("model_type", ""), source)
    if model_type == "minicpmv":    # (the language model its version picks)
        model_type = minicpmv.llm_type(c, source)
    elif model_type == "minicpmo":
        model_type = minicpmo.llm_type(c, source)
    # (Keye-VL's and Isaac's: Qwen3ForCausalLM)
    model_type = KEYE_TEXT.get(model_type, ISAAC_TEXT.get(model_type, model_type))
    archs = cfg.get("architectures")
    llm_refusal(cfg, archs, source)     # (InternVL's remote code: its llm_config's classes)
    is_causal_refusal(c, model_type, source)    # (bidirectional: no KV cache in vLLM)
    if model_type in MAMBA_ONLY_TYPES:      # attention-free: no heads to read
        dtype = config_dtype(c.get("torch_dtype"), c.get("dtype"), source)
        named = name or model_name(cfg, model_type)
        return replace(read_mamba_only(c, model_type, name=named, source=source, dtype=dtype),
                       architecture=architecture(archs))
    if model_type == ZAMBA2:        # (its class's derived keys: `kvcore.models.zamba2`)
        c = as_built(c, source)
    written, c = c, text_keys(c, model_type, source)    # (ERNIE-4.5-VL's [text, vision] keys)
    defaults = {**CLASS_DEFAULTS.get(model_type, {}), **MODEL_TYPE_DEFAULTS.get(model_type, {})}
    if model_type in kv_sharing.GEMMA3N_TYPES:
        c = kv_sharing.one_width(c, source)

    def get(key: str, default: Any = None, *, required: bool = False) -> Any:
        if key in c and c[key] is not None:
            return c[key]
        if key in defaults:
            return defaults[key]
        if required:
            raise InputError(f"missing '{key}', needed to size the KV cache"
                             + (f" (model_type {model_type!r})" if model_type else ""),
                             path=source or None, field=key)
        return default

    def get_int(key: str, default: Any = None, *, required: bool = False) -> Any:
        v = get(key, default, required=required)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2**63):
            raise InputError(f"expected a non-negative integer below 2^63, got {v!r}",
                             path=source or None, field=key)
        return v

    def get_dim(key: str, default: Any = None, *, required: bool = False) -> Any:
        """A size or a period: a zero divides by zero or sizes nothing; layers are bounded."""
        v = get_int(key, default, required=required)
        most = MAX_LAYERS if key == "num_hidden_layers" else None
        if v is not None and (v < 1 or (most is not None and v > most)):
            raise InputError(f"expected an integer >= 1{'' if most is None else f' and <= {most:,}'}"
                             f", got {v!r}", path=source or None, field=key)
        return v

    nemotron = nemotron_h_layers(c, source) if model_type == "nemotron_h" else None
    # vLLM builds a Nemotron-H's layers from its pattern, whatever num_hidden_layers says
    n_layers = len(nemotron[0]) if nemotron else get_dim("num_hidden_layers", required=True)
    heads = get_dim("num_attention_heads", required=True)
    hidden = get_dim("hidden_size", required=True)
    kv_heads = kv_heads_of(c, model_type, heads, get, get_dim)
    head_dim = head_dim_of(c, model_type, hidden, heads, get_dim, source)
    if head_dim < 1:
        raise InputError(f"hidden_size {hidden} over num_attention_heads {heads} leaves no "
                         "head_dim (give 'head_dim')", path=source or None, field="head_dim")
    dtype = config_dtype(get("torch_dtype"), get("dtype"), source)
    mla = read_mla(c, model_type, get, get_dim, source)
    if mla is None and heads % kv_heads:        # (vLLM's Attention layer asserts it)
        raise InputError(f"{kv_heads} KV heads do not divide the {heads} attention heads "
                         "(num_attention_heads), as vLLM's attention layer requires",
                         path=source or None, field="num_key_value_heads")
    kinds = (("mla",) * n_layers if mla is not None else nemotron[0] if nemotron
             else layer_kinds(c, model_type, n_layers, get, get_dim, source))
    if model_type in kv_sharing.GEMMA4_TYPES:
        kinds = kv_sharing.gemma4_kinds(kinds)
    window_key = WINDOW_KEYS.get(model_type, "sliding_window")    # (MiMo-V2's own key)
    if "sliding" in kinds and window_key in c and c[window_key] is None:
        # explicit null: the model code gives sliding layers no window (gemma2.py, llama.py)
        kinds = tuple("full" if k == "sliding" else k for k in kinds)
    windowed = "sliding" in kinds or V4_KIND in kinds     # (every DeepSeek-V4 layer: a window)
    window = get_int(window_key) if windowed else None
    if windowed and not window:
        raise InputError(f"sliding-window layers but no '{window_key}'", path=source or None,
                         field=window_key)
    if window and model_type in ("cohere2", "cohere2_moe"):
        window += 1  # vLLM's commandr.py, cohere2_moe.py: a sliding layer sees the window + 1
    chunk = get_int("attention_chunk_size") if "chunked" in kinds else None
    if "chunked" in kinds and not chunk:
        raise InputError("chunked-local layers but no 'attention_chunk_size'",
                         path=source or None, field="attention_chunk_size")
    mamba = hybrid_mamba(c, text_path(cfg) is not None, model_type, kinds, hidden, archs, dtype,
                         nemotron is not None, get, get_dim, source)
    # vLLM's aliases: n_routed_experts is DeepSeek's name; a key the config gives first, then
    # its class's default under any alias (DeepseekV3Config's n_routed_experts: 256)
    # (Llama4TextConfig's num_local_experts default: 16)
    num_experts = next((get_int(k) for k in EXPERT_KEYS if c.get(k) is not None), next(
        (get_int(k) for k in EXPERT_KEYS if get(k) is not None),
        EXPERTS_DEFAULT if model_type == "llama4_text" else 0)) or 0
    moe_inter = get_int("moe_intermediate_size") or get_int("intermediate_size", 0)
    if model_type == "jamba":
        period, offset = jamba_layout("expert", get, get_dim, source)
        moe_layers = tuple(i % period == offset for i in range(n_layers))
    elif nemotron:
        moe_layers = nemotron[1]
    elif num_experts and model_type == "exaone_moe" and isinstance(c.get("mlp_layer_types"),
                                                                    list):
        # (exaone_moe.py: experts where mlp_layer_types says "sparse"; ExaoneMoeConfig derives
        # the list from first_k_dense_replace only where the file gives none)
        moe_layers = tuple(t == "sparse" for t in c["mlp_layer_types"][:n_layers])
    elif num_experts and get("first_k_dense_replace") is not None:
        # DeepSeek (vLLM's deepseek_v2.py): dense feed-forward in the first k layers, then
        # MoE every moe_layer_freq-th layer (openPangu's: `pangu_fields`)
        first, freq = get_int("first_k_dense_replace"), get_dim("moe_layer_freq", 1)
        moe_layers = tuple(i >= first and i % freq == 0 for i in range(n_layers))
    elif num_experts and model_type in SPARSE_STEP_TYPES:
        moe_layers = sparse_step_layers(get, get_dim, n_layers, source)
    elif model_type == "llama4_text":
        moe_layers = llama4_moe_layers(get_int, n_layers)
    else:
        moe_layers = tuple(num_experts > 0 for _ in range(n_layers))
    counted_moe = counted_moe_layers(get, n_layers, num_experts)
    max_pos = get_int("max_position_embeddings", required=True)
    limit, default = lengths(c, max_pos, source)
    vision = vision_tower(cfg, model_type, archs, hidden, source, dtype)
    g = ModelGeometry(
        name=name or model_name(cfg, shown), model_type=model_type,
        layer_kinds=kinds, num_attention_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
        hidden_size=hidden, dtype=dtype, max_position_embeddings=max_pos, sliding_window=window,
        attention_chunk_size=chunk, mamba=mamba, mla=mla,
        # (Llama 4's dense layers are intermediate_size_mlp wide; its experts intermediate_size)
        intermediate_size=(get_int("intermediate_size_mlp", MLP_WIDTH_DEFAULT)
                           if model_type == "llama4_text" else get_int("intermediate_size", 0)),
        vocab_size=get_int("vocab_size", 0),
        tie_word_embeddings=bool(get("tie_word_embeddings", False)), num_experts=num_experts,
        moe_intermediate_size=moe_inter if num_experts else 0, moe_layers=moe_layers,
        # (the census's qwen2-moe-sparse case counts Qwen2-MoE's)
        attention_bias=attention_biased(model_type, get),
        mlp_bias=get("mlp_bias", False) is True,
        qk_norm=(model_type in GDN_TYPES or model_type in QK_NORM_TYPES
                 or model_type in USE_QK_NORM_TYPES and bool(get("use_qk_norm", False))),
        router_score_bias=get("topk_method") == "noaux_tc" or get("use_routing_bias") is True,
        mtp_layers=(get_int(MTP_KEYS.get(model_type, "num_nextn_predict_layers"),
                            MTP_MODULES[model_type]) or 0 if model_type in MTP_MODULES else 0),
        vision_params=vision.total, vision_whole=vision.whole, vision_heads=vision.heads,
        vision_mlp_width=vision.mlp_width, vision_deepstack=vision.deepstack,
        vision_modalities=vision.modalities, vision_data_parallel=vision.data_parallel,
        vision_parts=vision.parts, ple_scratch_width=(n_layers * (get_int(
            "hidden_size_per_layer_input", 0) or 0) if vision.parts else 0),
        vision_kept=vision.kept, vision_data_split=vision.data_split, vision_fp32=vision.fp32,
        vision_head_bound=vision.head_bound, vision_kv_floor=vision.kv_floor,
        **quant_fields(get("quantization_config"), architecture(archs), vision, source),
        source=source, architecture=architecture(archs),
        num_experts_per_tok=experts_per_tok(c, get, get_int),
        num_shared_experts=get_int("n_shared_experts") or get_int("num_shared_experts") or 0,
        # (Llama 4's MoE layers build one shared expert as wide as the routed ones, llama4.py
        # `Llama4MoE`; no key names it and perf.py bills none)
        shared_expert_width=(moe_inter if model_type == "llama4_text"
                             else shared_width(get_int, model_type))
        if num_experts else 0,
        counted_moe_layers=counted_moe,
        perf_swa=perf_swa(c, model_type, n_layers, get),
        perf_intermediate=perf_intermediate(text_config(cfg), model_type),
        classic=classic_block(model_type, hidden, head_dim, get, get_dim),
        context_limit=limit, default_len=default,
        **kv_sharing.gemma_fields(c, model_type, kinds, kv_heads, head_dim, heads, get, get_int,
                                  source))
    if g.quantization == "fp8":
        fp8_ignored.check(g)   # (vLLM refuses a list naming part of a fused linear)
    int_quant_rank.check(g)    # (the same, of AWQ's modules_to_not_convert)
    modelopt_rank.check(g)     # (and of ModelOpt's exclude_modules)
    # (a family's own fields: `kvcore.models.family_fields`)
    g = family_fields(g, c, written, n_layers, get, get_int, get_dim, source)
    rope_keys = pangu_rope_keys(c) if model_type == PANGU_ULTRA_MOE else isaac_rope(c, archs)
    # (Intern-S1-Pro's FoPE: its own parameters and cache, in place of the RoPE cache)
    g = replace(g, fope_freqs=fope_freqs(cfg, g.head_dim, g.max_position_embeddings, source))
    return replace(g, **buffer_fields(cfg, rope_keys, g, get, vision.buffers),
                   mm_atomic_items=atomic_items(cfg), **isaac_head(cfg, archs),
                   weights_unmodelled=g.weights_unmodelled or quant_unsized.why(g))
