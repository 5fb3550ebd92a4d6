"""NVIDIA's Nemotron-NAS models (``nemotron-nas``, `DeciLMForCausalLM`: Llama-3.3-Nemotron-
Super-49B, Llama-3.1-Nemotron-Ultra-253B, -51B) as vLLM 0.33's nemotron_nas.py builds them: Llama
layers each shaped by its entry of ``block_configs`` (the remote config class turns each into
records; checked against vLLM built on the meta device from a stand-in of that class:
tests/data/nemotron_nas/).

A layer's attention is absent where ``attention.no_op`` (no KV cache, no input norm), else
Llama attention with ``num_attention_heads // n_heads_in_group`` KV heads: layers whose KV heads
differ have pages of their own sizes, which vLLM puts in one group as
`UniformTypeKVCacheSpecs` (a block costs the sum of the layers' pages; `kvcore.sizing`). Its
MLP is absent where ``ffn.no_op``, else ``int(2 * ffn_mult * hidden_size / 3)`` wide, rounded
up to a multiple of 256. vLLM's ModelConfig takes the first attention layer's KV heads as the
model's. A layer ``replace_with_linear`` (the config class clears its n_heads_in_group or
ffn_mult) is one vLLM does not build: it fails dividing by None, and so is refused here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, clipped

# (its model_type; the class reads block_configs whatever the model_type, so either names it)
NEMOTRON_NAS = "nemotron-nas"
DECILM = "DeciLMForCausalLM"
# vLLM's build failure where a layer is replace_with_linear (its value cleared to None)
_LINEAR = ("vLLM 0.33's nemotron_nas.py does not build a layer replace_with_linear (it reads "
           "the {} the config class clears: TypeError: unsupported operand type(s))")


@dataclass(frozen=True, slots=True)
class NasBlocks:
    """Each layer's KV heads (0: a no_op attention) and MLP width (0: a no_op FFN)."""
    kv_heads: tuple[int, ...]
    ffn_widths: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Where:
    source: str

    def fail(self, i: int, key: str, why: str) -> InputError:
        return InputError(why, path=self.source or None, field=f"block_configs[{i}].{key}")


def ffn_width(mult: float, hidden: int) -> int:
    """DeciLM's `_ffn_mult_to_intermediate_size`: 2/3 of mult x hidden, rounded up to 256."""
    width = int(2 * mult * hidden / 3)
    return -(-width // 256) * 256


def _sub(block: Any, key: str, i: int, where: _Where) -> tuple[bool, dict[str, Any]]:
    """(no_op, the sub-block) of entry i, as the remote config class checks it."""
    sub = block.get(key) if isinstance(block, dict) else None
    if not isinstance(sub, dict):
        raise where.fail(i, key, f"must be an object, got {clipped(sub)}")
    no_op, linear = sub.get("no_op", False), sub.get("replace_with_linear", False)
    for flag, v in (("no_op", no_op), ("replace_with_linear", linear)):
        if not isinstance(v, bool):
            raise where.fail(i, f"{key}.{flag}", f"expected true or false, got {clipped(v)}")
    if no_op and linear:
        raise where.fail(i, key, "no_op and replace_with_linear are both true: the config "
                                 "class asserts at most one")
    if linear:
        what = "n_heads_in_group" if key == "attention" else "ffn_mult"
        raise where.fail(i, f"{key}.replace_with_linear", _LINEAR.format(what))
    return no_op, sub


def read_nas(c: dict[str, Any], n_layers: int, heads: int, hidden: int,
             source: str) -> NasBlocks:
    """Each layer's KV heads and MLP width from ``block_configs`` (0: none)."""
    where, blocks = _Where(source), c.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n_layers:
        raise InputError(f"must list {n_layers} blocks (num_hidden_layers), got "
                         f"{clipped(blocks)}", path=source or None, field="block_configs")
    kv: list[int] = []
    widths: list[int] = []
    for i, block in enumerate(blocks):
        no_attention, attn = _sub(block, "attention", i, where)
        group = attn.get("n_heads_in_group")
        if no_attention:
            kv.append(0)
        elif not isinstance(group, int) or isinstance(group, bool) or not 1 <= group <= heads \
                or heads % (heads // group):
            raise where.fail(i, "attention.n_heads_in_group",
                             f"expected an integer from 1 to {heads} whose KV heads "
                             f"(num_attention_heads // it) divide the {heads} attention heads, "
                             f"as vLLM's attention layer requires; got {clipped(group)}")
        else:
            kv.append(heads // group)
        no_ffn, ffn = _sub(block, "ffn", i, where)
        mult = ffn.get("ffn_mult")
        if no_ffn:
            widths.append(0)
        elif not isinstance(mult, (int, float)) or isinstance(mult, bool) or not 0 < mult < 1e6:
            raise where.fail(i, "ffn.ffn_mult",
                             f"expected a number above 0, got {clipped(mult)}")
        else:   # (the config class rounds it to 6 decimals)
            widths.append(ffn_width(round(mult, 6), hidden))
    if not any(kv):
        raise InputError("no layer has attention (every attention.no_op): vLLM's ModelConfig "
                         "cannot find the KV heads (\"Could not determine the number of "
                         "key-value attention heads\")", path=source or None,
                         field="block_configs")
    return NasBlocks(kv_heads=tuple(kv), ffn_widths=tuple(widths))


def nas_fields(c: dict[str, Any], n_layers: int, heads: int, hidden: int, head_dim: int,
               quantised: bool, source: str) -> dict[str, Any]:
    """The geometry's Nemotron-NAS parts: its layers' kinds, KV heads (the first attention
    layer's the model's) and dims, MLP widths."""
    nas = read_nas(c, n_layers, heads, hidden, source)
    return {"nas": nas, "layer_kinds": tuple("full" if k else "mlp" for k in nas.kv_heads),
            "num_kv_heads": next(k for k in nas.kv_heads if k),
            "layer_dims": tuple((k, head_dim) for k in nas.kv_heads),
            "weights_unmodelled": ("a quantised Nemotron-NAS checkpoint's weights (but "
                                   "ModelOpt's and fp8's)" if quantised else "")}


def refuse_nas_tp(nas: NasBlocks, name: str, tp: int) -> None:
    """vLLM's LlamaAttention's assert, layer by layer: a layer's KV heads and the ranks must
    divide one another."""
    for i, kv in enumerate(nas.kv_heads):
        if kv and (tp % kv if tp >= kv else kv % tp):
            raise InputError(f"{name}'s layer {i} has {kv} KV heads, and it and they must "
                             f"divide one another, as vLLM requires; got {tp}",
                             field="tensor_parallel_size")
