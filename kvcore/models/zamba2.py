"""Zyphra's Zamba2 (Zamba2-1.2B, 2.7B, 7B) as vLLM 0.33's zamba2.py builds it.

Every layer of ``layers_block_type`` keeps a Mamba2 mixer (`MambaMixer2`); a ``hybrid`` layer
first runs one of ``num_mem_blocks`` shared transformer blocks (the k-th hybrid layer block
k % num_mem_blocks), through a linear of its own (kvcli's kind ``parallel``: attention and a
mixer in one layer). The blocks' weights are shared, their caches are not: each entry of
``hybrid_layer_ids`` gets an `Attention` of its own, so a KV cache, named ``model.attn.J``
and registered block by block before any mixer: the order vLLM's spec collection sees.
The attention reads the layer's input beside the embeddings, ``attention_hidden_size`` (2 x
hidden_size) wide: ``num_attention_heads`` heads of ``attention_head_dim`` (2 x hidden / heads),
every head a KV head (vLLM's Attention is given no other count). transformers' Zamba2Config
derives those, ``mamba_headdim``, ``intermediate_size`` and ``hybrid_layer_ids`` in
``__post_init__``, but a config.json's own values win (the census's 8-layer config keeps the
default's 9 ids: vLLM builds 9 caches, one of them used). vLLM builds len(layers_block_type)
layers whatever num_hidden_layers says, and always ties the LM head to the embedding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError

ZAMBA2 = "zamba2"
# the most shared-block uses a config may list (one Attention each): hf_config's layer bound
MAX_USES = 100_000
# transformers 5.20's Zamba2Config (the oracle's) for the keys kvcli reads
ZAMBA2_DEFAULTS: dict[str, Any] = {
    "vocab_size": 32000, "max_position_embeddings": 4096, "hidden_size": 2560,
    "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_ngroups": 1,
    "n_mamba_heads": 8, "use_conv_bias": True, "add_bias_linear": False, "hidden_act": "gelu",
    "num_attention_heads": 32, "num_mem_blocks": 1, "use_shared_attention_adapter": False,
    "adapter_rank": 128, "use_mem_rope": False, "use_long_context": False}
# Zamba2Config's layers when a config lists none: 54, nine of them hybrid
DEFAULT_LAYERS = (["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"]
                  + ["mamba"] * 3 + ["hybrid"] + ["mamba"] * 2)


@dataclass(frozen=True, slots=True)
class Zamba2Blocks:
    """What a Zamba2's shared transformer blocks are built of."""
    uses: int               # len(hybrid_layer_ids): Attention layers (KV caches) and adapters
    mem_blocks: int         # num_mem_blocks: shared blocks, weights counted once each
    attention_hidden: int   # attention_hidden_size: the q, k, v input and width
    adapter_rank: int
    attention_adapters: bool    # use_shared_attention_adapter: q, k, v LoRAs a use
    linear_bias: bool       # add_bias_linear: the MLP's and the Mamba mixers' projections
    rope: bool              # use_mem_rope

    def attention_names(self) -> list[str]:
        """vLLM's names in its registration order: block b's uses, numbered from
        b x (uses + blocks - 1) // blocks (so a name can be skipped: 7 uses over 3 blocks are
        0-2, 3-4, 6-7)."""
        names = []
        m, h = self.mem_blocks, self.uses
        for b in range(min(m, h)):      # (a block past the uses has none)
            first = b * (h + m - 1) // m
            names += [f"model.attn.{first + k}" for k in range(-(-(h - b) // m))]
        return names


def _refuse(why: str, source: str, field: str) -> InputError:
    return InputError(why, path=source or None, field=field)


def _int(c: dict[str, Any], key: str, source: str) -> int:
    v = c[key]
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v < 2**63:
        raise _refuse(f"expected an integer >= 1, got {v!r}", source, key)
    return v


def as_built(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """The config as vLLM's model reads it: Zamba2Config's defaults and derived keys filled in
    where the file leaves them out, ``num_hidden_layers`` the layers built, ``head_dim`` the
    attention's and every head a KV head; refused where vLLM cannot build it."""
    c = {**ZAMBA2_DEFAULTS, **{k: v for k, v in cfg.items() if v is not None}}
    layers = c.setdefault("layers_block_type", DEFAULT_LAYERS)     # (read again by the kinds)
    if not isinstance(layers, list) or not layers or not all(isinstance(t, str) for t in layers):
        raise _refuse("expected a list of layer types (hybrid, mamba)", source,
                      "layers_block_type")
    hidden, heads = _int(c, "hidden_size", source), _int(c, "num_attention_heads", source)
    c.setdefault("intermediate_size", 4 * hidden)
    c.setdefault("attention_hidden_size", 2 * hidden)
    c.setdefault("attention_head_dim", 2 * hidden // heads)
    c.setdefault("mamba_headdim", _int(c, "mamba_expand", source) * hidden
                 // _int(c, "n_mamba_heads", source))
    for key in ("intermediate_size", "attention_hidden_size", "attention_head_dim",
                "mamba_headdim"):
        _int(c, key, source)    # (the file's own, where it gives one: a dict multiplied before)
    ids = c.setdefault("hybrid_layer_ids", [i for i, t in enumerate(layers) if t == "hybrid"])
    if (not isinstance(ids, list) or len(ids) > MAX_USES
            or not all(isinstance(i, int) for i in ids)):
        raise _refuse(f"expected a list of at most {MAX_USES:,} layer indices", source,
                      "hybrid_layer_ids")
    listed = set(ids)
    missing = [i for i, t in enumerate(layers) if t == "hybrid" and i not in listed]
    if missing:     # (vLLM's layer2block_map has no entry for it: a KeyError)
        raise _refuse(f"hybrid layer {missing[0]} of layers_block_type is not listed, and vLLM "
                      "cannot build it", source, "hybrid_layer_ids")
    if c["attention_head_dim"] * heads != c["attention_hidden_size"]:
        raise _refuse(f"attention_head_dim {c['attention_head_dim']} x {heads} heads must be "
                      f"attention_hidden_size {c['attention_hidden_size']}, as vLLM's Zamba2 "
                      "attention requires", source, "attention_head_dim")
    if c["hidden_act"] != "gelu":
        raise _refuse(f"vLLM's Zamba2 MLP takes only GELU, got {c['hidden_act']!r}", source,
                      "hidden_act")
    if c["mamba_headdim"] * c["n_mamba_heads"] != c["mamba_expand"] * hidden:
        # (vLLM's mixer splits mamba_expand x hidden over the heads, its state takes the key)
        raise _refuse("mamba_headdim x n_mamba_heads must be mamba_expand x hidden_size (kvcli "
                      "does not model a mixer whose state has other heads)", source,
                      "mamba_headdim")
    if c["use_long_context"]:
        c["max_position_embeddings"] = 16384    # (Zamba2Config sets it over the file's)
    c.update(num_hidden_layers=len(layers), head_dim=c["attention_head_dim"],
             num_key_value_heads=heads, tie_word_embeddings=True)
    for key in ("n_head_kv", "num_kv_heads", "multi_query_group_num", "num_attention_groups"):
        c.pop(key, None)
    return c


def zamba2_kinds(c: dict[str, Any]) -> tuple[str, ...]:
    """Each layer's kind: ``parallel`` (a shared block's use and a mixer) or ``mamba``."""
    return tuple("parallel" if t == "hybrid" else "mamba" for t in c["layers_block_type"])


def zamba2_blocks(c: dict[str, Any], source: str) -> Zamba2Blocks:
    return Zamba2Blocks(
        uses=len(c["hybrid_layer_ids"]), mem_blocks=_int(c, "num_mem_blocks", source),
        attention_hidden=_int(c, "attention_hidden_size", source),
        adapter_rank=_int(c, "adapter_rank", source),
        attention_adapters=bool(c["use_shared_attention_adapter"]),
        linear_bias=bool(c["add_bias_linear"]), rope=bool(c["use_mem_rope"]))
