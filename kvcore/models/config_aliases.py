"""The sizes a config names by its own class's keys, read as the config class vLLM 0.33 loads
reads them: transformers' ``attribute_map`` aliases (GPT-2's ``n_layer`` is what
``num_hidden_layers`` reads), vLLM's RWConfig (the original Falcon checkpoints' model types
``RefinedWeb`` and ``RefinedWebModel``) and ChatGLMConfig, and the values a class derives in
its constructor (GPTBigCode's one KV head under ``multi_query``, DBRX's ``attn_config``).

`canonical` gives `hf_config.read_hf_config` the config with the keys it reads filled in from
them; a key the config itself gives under kvcli's name is kept. Without this those configs were
refused for a missing ``num_hidden_layers`` (the KV-spec census: tests/data/kv_spec_census/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.longcat import ALIASES as LONGCAT_ALIASES
from kvcore.models.longcat import DEFAULTS as LONGCAT_DEFAULTS
from kvcore.models.longcat import LONGCAT, longcat_derived
from kvcore.models.step3 import ALIASES as STEP3_ALIASES
from kvcore.models.step3 import DEFAULTS as STEP3_DEFAULTS
from kvcore.models.step3 import STEP3_TEXT
from kvcore.models.step3p5 import STEP3P5, hub_trimmed

# model_type -> {the key kvcli reads: the class's own}: transformers 5.20's attribute_map
# (GPT2Config, GPTJConfig, GPTBigCodeConfig, BloomConfig, DbrxConfig) and vLLM's RWConfig and
# ChatGLMConfig (transformers_utils/configs/falcon.py, chatglm.py)
ALIASES: dict[str, dict[str, str]] = {
    "gpt2": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
             "hidden_size": "n_embd", "max_position_embeddings": "n_positions"},
    "gptj": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
             "hidden_size": "n_embd", "max_position_embeddings": "n_positions"},
    "gpt_bigcode": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
                    "hidden_size": "n_embd", "max_position_embeddings": "n_positions"},
    "bloom": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    "RefinedWeb": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
                   "num_kv_heads": "n_head_kv"},
    "dbrx": {"num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
             "hidden_size": "d_model", "max_position_embeddings": "max_seq_len"},
    "chatglm": {"num_hidden_layers": "num_layers", "intermediate_size": "ffn_hidden_size"},
}
ALIASES["RefinedWebModel"] = ALIASES["RefinedWeb"]
ALIASES[LONGCAT] = LONGCAT_ALIASES
ALIASES[STEP3_TEXT] = STEP3_ALIASES
ALIASES[STEP3P5] = {}     # (its hub configs' padded per-layer lists: `_derived`)
# EXAONE 3 (remote ExaoneConfig's attribute_map) and TeleChat2 (telechat2.py sets the
# attribute_map on the config it loads)
ALIASES["exaone"] = {"num_hidden_layers": "num_layers"}
ALIASES["telechat"] = {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
                       "intermediate_size": "ffn_hidden_size"}
# PLaMo 3 (remote code): plamo3.py slides layer i by its class's interleaved_sliding_window,
# window_size unless (i + 1) % sliding_window_pattern == 0 (`layer_kinds`)
ALIASES["plamo3"] = {"sliding_window": "window_size"}

# What each class gives a key the config leaves out, under the class's own key
CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "gpt2": {"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024,
             "vocab_size": 50257, "tie_word_embeddings": True},
    "gptj": {"n_layer": 28, "n_head": 16, "n_embd": 4096, "n_positions": 2048,
             "vocab_size": 50400, "rotary_dim": 64},
    "gpt_bigcode": {"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024,
                    "vocab_size": 50257, "tie_word_embeddings": True},
    "bloom": {"n_layer": 2, "n_head": 8, "hidden_size": 64, "vocab_size": 250880,
              "tie_word_embeddings": True},
    "RefinedWeb": {"n_layer": 2, "n_head": 8, "hidden_size": 64, "vocab_size": 250880},
    "dbrx": {"n_layers": 24, "n_heads": 16, "d_model": 2048, "max_seq_len": 2048,
             "vocab_size": 32000},
    "chatglm": {"num_layers": 28, "hidden_size": 4096, "num_attention_heads": 32,
                "seq_length": 2048, "padded_vocab_size": 65024, "ffn_hidden_size": 13696},
}
CLASS_DEFAULTS["RefinedWebModel"] = CLASS_DEFAULTS["RefinedWeb"]
CLASS_DEFAULTS[LONGCAT] = LONGCAT_DEFAULTS
CLASS_DEFAULTS[STEP3_TEXT] = STEP3_DEFAULTS
CLASS_DEFAULTS[STEP3P5] = {}
CLASS_DEFAULTS["exaone"] = {"num_layers": 32, "num_attention_heads": 32, "hidden_size": 2048,
                            "max_position_embeddings": 2048, "vocab_size": 102400}
CLASS_DEFAULTS["telechat"] = {}
# (Plamo3Config's pattern; its window_size default differs between its published versions,
# 128 and 2,048, so a config without one is refused for it)
CLASS_DEFAULTS["plamo3"] = {"sliding_window_pattern": 8}
# vLLM's max_model_len where a config names no length key at all (Bloom's ALiBi, the original
# Falcon's): `_get_and_verify_max_len`'s default
DEFAULT_LENGTH = 2048
RW_TYPES = ("RefinedWeb", "RefinedWebModel")
# The most layers a config may give (the largest models have a few hundred); a layer count in
# the billions would build per-layer tuples until memory ran out.
MAX_LAYERS = 100_000
RW_ROPE_POSITIONS = 8192


def canonical(c: dict[str, Any], source: str = "") -> dict[str, Any]:
    """``c`` with the keys kvcli reads filled in from the class's own (a new dict; ``c`` itself
    when its model_type has none)."""
    model_type = c.get("model_type")
    if not isinstance(model_type, str) or model_type not in ALIASES:
        return c
    out = {**CLASS_DEFAULTS[model_type], **c}
    if model_type in ("bloom", *RW_TYPES) and out.get("n_embed") is not None:
        # (both classes pop the old n_embed kwarg)
        out["hidden_size"] = _size(out["n_embed"], "n_embed", source)
    for ours, theirs in ALIASES[model_type].items():
        if out.get(ours) is None and out.get(theirs) is not None:
            out[ours] = _size(out[theirs], theirs, source,
                              MAX_LAYERS if ours == "num_hidden_layers" else 2**63 - 1)
    if model_type in RW_TYPES:
        _check_built(c, model_type, source)
        if out.get("max_position_embeddings") is None:
            # falcon.py's RoPE spans getattr(config, "max_position_embeddings", 8192) positions,
            # while vLLM runs a config naming no length at its default 2,048 (the smallest
            # length key wins: `context_limit.derived_length`)
            out["max_position_embeddings"] = RW_ROPE_POSITIONS
            out.setdefault("seq_length", DEFAULT_LENGTH)
    elif model_type == "chatglm":
        _check_built(c, model_type, source)
    elif model_type == LONGCAT:     # (2 x num_layers attentions; the keys vLLM reads)
        out = longcat_derived(out, c, source)
    elif model_type == "bloom" and out.get("max_position_embeddings") is None:
        out["max_position_embeddings"] = DEFAULT_LENGTH
    return _derived(out, model_type, source)


def _size(value: Any, key: str, source: str, most: int = 2**63 - 1) -> int:
    """A size under the class's own key, checked here so a refusal names that key (read on
    under kvcli's, a bad one was refused as ``num_hidden_layers``, a key the file lacks)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"expected an integer >= 1, got {clipped(value)}", path=source or None,
                         field=key)
    if value > most:
        bound = "below 2^63" if most == 2**63 - 1 else f"<= {most:,}"
        raise InputError(f"expected an integer >= 1 and {bound}, got {clipped(value)}",
                         path=source or None, field=key)
    return value


def _check_built(c: dict[str, Any], model_type: str, source: str) -> None:
    """vLLM 0.33 builds these models only with keys their config class (RWConfig, vLLM's
    ChatGLMConfig) does not default under transformers 5: falcon.py's RoPE base (it reads
    rope_parameters, which vLLM derives from rope_theta) unless ALiBi, chatglm.py's
    original_rope, and tie_word_embeddings; without one building the model fails with an
    AttributeError (tests/data/gpt_family/: the published falcon-7b and falcon-40b configs of
    this form)."""
    keys = ("original_rope", "tie_word_embeddings") if model_type == "chatglm" else (
        ("tie_word_embeddings",) if c.get("alibi") else ("rope_theta", "tie_word_embeddings"))
    missing = next((k for k in keys if c.get(k) is None
                    and not (k == "rope_theta" and c.get("rotary_emb_base") is not None)), None)
    if missing is not None:
        raise InputError(f"model_type {model_type!r} without '{missing}': vLLM 0.33's config "
                         "class does not default it, and building the model fails "
                         "(AttributeError)" + (" (a converted checkpoint's model_type 'falcon' "
                                               "loads)" if model_type in RW_TYPES else ""),
                         path=source or None, field=missing)


def _derived(out: dict[str, Any], model_type: str, source: str) -> dict[str, Any]:
    """The values a class's constructor derives rather than reads."""
    if model_type in RW_TYPES:
        # RWConfig (vLLM's, model_type "falcon"): one KV head unless n_head_kv says otherwise,
        # and its falcon-40b hack: hidden_size 8192 is the new decoder architecture
        out["model_type"] = "falcon"
        out.setdefault("multi_query", True)
        if out.get("num_kv_heads") is None:
            out["num_kv_heads"] = 1
        if out.get("hidden_size") == 8192:
            out["new_decoder_architecture"] = True
    elif model_type == "gptj":
        # gpt_j.py's rotary: rotary_dim of the head (its class default 64)
        heads, hidden = out.get("num_attention_heads"), out.get("hidden_size")
        rotary = _size(out.get("rotary_dim") or 64, "rotary_dim", source)
        if isinstance(heads, int) and isinstance(hidden, int) and 0 < heads <= hidden:
            out["partial_rotary_factor"] = rotary / (hidden // heads)
    elif model_type == "gpt_bigcode":
        # GPTBigCodeConfig.__post_init__ sets it, whatever the file says
        mq = out.get("multi_query", True)
        out["num_key_value_heads"] = 1 if mq else out.get("num_attention_heads")
    elif model_type == "dbrx":
        attn, ffn = out.get("attn_config"), out.get("ffn_config")
        for name, part in (("attn_config", attn), ("ffn_config", ffn)):
            if part is not None and not isinstance(part, dict):
                # (DbrxConfig keeps it as given, and vLLM's dbrx.py fails on its attributes)
                raise InputError(f"must be an object, got {clipped(part)}",
                                 path=source or None, field=name)
        attn, ffn = attn or {}, ffn or {}
        # (DbrxAttentionConfig's kv_n_heads defaults to 1; DbrxFFNConfig's 3,584 wide, 4 experts
        # of which 1 a token)
        for key, part, theirs, default in (
                ("num_key_value_heads", attn, "attn_config.kv_n_heads", 1),
                ("num_experts", ffn, "ffn_config.moe_num_experts", 4),
                ("num_experts_per_tok", ffn, "ffn_config.moe_top_k", 1),
                ("moe_intermediate_size", ffn, "ffn_config.ffn_hidden_size", 3584)):
            leaf = theirs.split(".")[1]
            out[key] = default if part.get(leaf) is None else _size(part[leaf], theirs, source)
        out["intermediate_size"] = 0
    elif model_type == "plamo3" and out.get("sliding_window") is None:
        raise InputError("model_type 'plamo3' without 'window_size': its sliding layers' window "
                         "(Plamo3Config's default differs between its published versions)",
                         path=source or None, field="window_size")
    elif model_type == STEP3P5:
        mtp = out.get("num_nextn_predict_layers")
        if mtp is not None and (not isinstance(mtp, int) or isinstance(mtp, bool)
                                or not 0 <= mtp < 2**63):
            # (checked before it cuts the lists: else refused as their length, 'layer_types')
            raise InputError(f"expected a non-negative integer below 2^63, got {clipped(mtp)}",
                             path=source or None, field="num_nextn_predict_layers")
        out = hub_trimmed(out)
    elif model_type == "chatglm":
        # chatglm.py: multi_query_group_num KV heads only under multi_query_attention; the
        # head is hidden_size / num_attention_heads (kv_channels is not read)
        # (each read under its own key, so a bad one is refused by the name the file gives it)
        out["num_key_value_heads"] = (_size(out.get("multi_query_group_num", 1),
                                            "multi_query_group_num", source)
                                      if out.get("multi_query_attention") else
                                      out.get("num_attention_heads"))
        out["partial_rotary_factor"] = 0.5      # (chatglm.py's rotary: half the head)
        for ours, theirs in (("max_position_embeddings", "seq_length"),
                             ("vocab_size", "padded_vocab_size")):
            # (chatglm.py's embedding and head are padded_vocab_size rows whatever vocab_size
            # says: it wins where given)
            if out.get(ours) is None or ours == "vocab_size" and out.get(theirs) is not None:
                out[ours] = _size(out[theirs], theirs, source) if out.get(
                    theirs) is not None else None
    return out
