"""An fp8 EAGLE / EAGLE-3 draft checkpoint as vLLM 0.33 builds it.

An EAGLE draft is quantised by its own config.json's ``quantization_config`` (the draft's
ModelConfig, config/speculative.py; the target's fp8 does not reach it). Under fp8
(Fp8LinearMethod) every decoder layer's q/k/v/o and gate/up/down and the ``fc`` folding the
target's hidden states in (a ReplicatedLinear built with the quant_config) hold 1 byte a weight
and, with ``weight_block_size``, a float32 scale per block of the rank's shard; each attention
layer four q/k/v/prob scales in the model dtype (Fp8KVCacheMethod); the LM head, norms and id
map stay as they are. vLLM matches ``ignored_layers`` against the modules' prefixes, which are
the target's numbering (``model.layers.{N + i}``, ``model.fc``): the checkpoint's own names
(``midlayer.*``, ``fc``) reach nothing, so the modules stay fp8 (tests/data/weights_census/
drafts_answers.json, `drafts/eagle3-8b-fp8-skip`). A list naming a module by its prefix is not
modelled (refused), nor another quantization method.
"""

from __future__ import annotations

from kvcore.errors import InputError, clipped
from kvcore.models.fp8_scales import block_grid
from kvcore.models.geometry import ModelGeometry

# (output, input, how the weight splits over TP ranks: "column", "row" or "replicated")
Fp8Linear = tuple[int, int, str]


def fp8_linears(g: ModelGeometry, n_target: int, eagle3: bool, fc: tuple[int, int] | None,
                name: str, field: str) -> tuple[Fp8Linear, ...]:
    """The draft's fp8 linears (empty unless its checkpoint is fp8); an InputError for a
    quantization kvcli does not size or an ignore list reaching a module."""
    if g.quantization is None:
        return ()
    if g.quantization != "fp8":
        raise InputError(f"draft {clipped(name)} is quantised with {g.quantization}, which "
                         "kvcli does not size for a draft (it sizes fp8 and unquantised ones)",
                         field=field)
    h, q = g.hidden_size, g.num_attention_heads * g.head_dim
    kv = g.num_kv_heads * g.head_dim
    out: list[Fp8Linear] = []
    names = []
    for i in range(g.num_layers):
        width = 2 * h if eagle3 and i == 0 else h
        out += [(q + 2 * kv, width, "column"), (h, q, "row"),
                (2 * g.intermediate_size, h, "column"), (h, g.intermediate_size, "row")]
        names += [f"model.layers.{n_target + i}.{m}" for m in (
            "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")]
    if fc is not None:
        out.append((fc[1], fc[0], "replicated"))
        names.append("model.fc")
    reached = sorted(set(names) & set(g.fp8_ignored))
    if reached:
        raise InputError(f"draft {clipped(name)}: its fp8 ignore list names {reached[0]}, one "
                         "of its modules; kvcli does not size a draft partly quantised",
                         field=field)
    return tuple(out)


def linear_bytes(lin: Fp8Linear, tp: int, block: tuple[int, int] | None) -> int:
    """One fp8 linear's bytes on one of `tp` ranks: 1 a weight and its float32 block scales."""
    o, i, how = lin
    o, i = (o // tp, i) if how == "column" else (o, i // tp) if how == "row" else (o, i)
    scales = block_grid(o, i, block) if block else 0
    return o * i + 4 * scales


def quantised_params(lin: tuple[Fp8Linear, ...]) -> int:
    return sum(o * i for o, i, _ in lin)
