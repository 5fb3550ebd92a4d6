"""What an fp8 block-quantised checkpoint's decoder layers hold on a rank, and the shards vLLM
0.33 refuses to build.

vLLM checks every quantised linear's shard against the block [N, K] as it creates its weights
(fp8_utils.py validate_fp8_block_shape): a row-parallel linear split over TP > 1 needs its
input shard whole K-wide blocks ("Weight input_size_per_partition = 96 is not divisible by
weight quantization block_k = 128."), a column-parallel linear split over TP > 1 its output
shard whole N-tall blocks ("Weight output_partition_size = 192 ..."). A linear of several
outputs (QKV, gate_up, Mamba2's in_proj, Qwen3.5's in_proj_qkvz) is never refused: with every
output whole blocks it passes, and with any not, ColumnParallelLinear sets
``allow_fp8_block_shape_mismatch`` and skips the check (linear.py
_maybe_allow_fp8_block_shape_mismatch). Replicated linears split nothing.

The routed experts (Fp8MoEMethod, fused_moe/oracle/fp8.py refine_fp8_moe_block_shape): a
per-rank intermediate size that is not whole N-blocks (or, at TP > 1, K-blocks) takes a finer
square block, the gcd of N, K, that size and the hidden size, when it is at least 32 (its
scales then on that grid); below 32 vLLM refuses ("The output_size of gate's and up's weight =
... block_n", "The input_size of down's weight = ... block_k", validate_fp8_block_shape_moe),
at TP 1 too.

A linear (or the routed experts) a quantization_config's ``ignored_layers`` /
``modules_to_not_convert`` leaves unquantised (`kvcore.models.fp8_ignored`) is not checked.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kvcore.models import fp8_scales as fp8
from kvcore.models.fp8_ignored import layer_skips
from kvcore.models.fp8_scales import Linear
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import shared_width
from kvcore.models.sparse_mla import layer_geometry


def layer_linears(g: ModelGeometry, tp: int, kind: str, moe: bool, shared: int) -> list[Linear]:
    """A decoder layer's quantised linears on a rank in the order vLLM builds them, routed
    experts apart (`expert_block`)."""
    mixer = fp8.mixer_linears(g, tp) if kind in ("mamba", "parallel") else []
    attn = fp8.attention_linears(g, tp) if kind not in ("mamba", "mlp") else []
    if g.model_type == "nemotron_h":
        # one block a layer: a mixer, or a squared-ReLU feed-forward (up, down)
        if kind != "mlp":
            return mixer + attn
        if moe:
            return fp8.mlp_linears(g, shared, tp, gated=False) if shared else []
        return fp8.mlp_linears(g, g.intermediate_size, tp, gated=False)
    out = attn + mixer
    if moe:
        out += fp8.mlp_linears(g, shared, tp) if shared else []
    elif g.intermediate_size:
        out += fp8.mlp_linears(g, g.intermediate_size, tp)
    return out


def expert_block(g: ModelGeometry, tp: int, block: tuple[int, int]) -> tuple[int, int] | str:
    """The block the routed experts' scales are on, or vLLM's refusal."""
    n, k = block
    ispp = g.moe_intermediate_size // tp
    if ispp % n == 0 and (tp == 1 or ispp % k == 0):
        return block
    fine = math.gcd(n, k, ispp, g.hidden_size)
    if fine >= 32:
        return fine, fine
    if ispp % n:
        return (f"The output_size of gate's and up's weight = {ispp} is not divisible by "
                f"weight quantization block_n = {n}.")
    return (f"The input_size of down's weight = {ispp} is not divisible by weight "
            f"quantization block_k = {k}.")


def expert_scales(g: ModelGeometry, tp: int, block: tuple[int, int] | None) -> int:
    """The routed experts' scales on a rank (w13: gate and up, Nemotron-H's up alone; w2):
    per tensor (`block` None) one an expert and projection, and with static inputs w13's and
    w2's input scales, one an expert each (Fp8MoEMethod.create_weights)."""
    if block is None:
        shards = 1 if g.model_type == "nemotron_h" else 2
        return g.num_experts * (shards + 1 + (2 if g.fp8_static else 0))
    fine = expert_block(g, tp, block)
    if isinstance(fine, str):
        return 0
    ispp, h = g.moe_intermediate_size // tp, g.hidden_size
    shards = 1 if g.model_type == "nemotron_h" else 2
    n, k = fine
    return g.num_experts * (shards * -(-ispp // n) * -(-h // k) + -(-h // n) * -(-ispp // k))


def linear_refusal(lin: Linear, tp: int, block: tuple[int, int]) -> str | None:
    _, parts, inp, split = lin
    if tp == 1 or split == "replicated":
        return None
    if split == "row" and inp % block[1]:
        return (f"Weight input_size_per_partition = {inp} is not divisible by weight "
                f"quantization block_k = {block[1]}.")
    if split == "column" and len(parts) == 1 and parts[0] % block[0]:
        return (f"Weight output_partition_size = {parts[0]} is not divisible by weight "
                f"quantization block_n = {block[0]}.")
    return None


def refusal(g: ModelGeometry, tp: int) -> tuple[int, str, str] | None:
    """The first layer (index, module, vLLM's words) vLLM refuses at `tp`, None if it builds."""
    block = g.fp8_block
    if block is None:
        return None
    shared = shared_width(g)
    for i, kind in enumerate(g.layer_kinds):
        moe = g.moe_layers[i] if i < len(g.moe_layers) else False
        skips = layer_skips(g, i, kind, moe)
        one = layer_geometry(g, i)     # (Step-3.5's heads a layer)
        lins = [(lin[0], lin) for lin in layer_linears(one, tp, kind, moe, shared)]
        if g.layer_v_dims:      # (MiMo-V2's heads, K and V widths a layer)
            from kvcore.models.mimo_v2 import mimo_linears  # (it imports this)

            lins = [(lin[0], lin) for lin in mimo_linears(g, i, tp)]
        vision = []
        if g.vision_experts is not None:
            # (ERNIE-4.5-VL's: the shared experts beside a dense text MLP built first, the
            # vision experts' side last)
            from kvcore.models.ernie45_vl_quant import dense_linears  # (it imports this)

            extra = [(f"{m}.{lin[0]}", lin) for m, lin in dense_linears(g, i, tp, moe)]
            attn = len(fp8.attention_linears(g, tp))
            vision = [x for x in extra if not x[0].startswith("shared_experts.")]
            lins = lins[:attn] + [x for x in extra if x not in vision] + lins[attn:]
        for name, lin in lins + vision:
            why = linear_refusal(lin, tp, block)
            if why and lin[0] not in skips:
                return i, name, why
        if moe and g.num_experts:
            fine = expert_block(g, tp, block)
            if isinstance(fine, str) and "experts" not in skips:
                return i, "experts", fine
        v = g.vision_experts
        if v is not None and v.routed[i] and isinstance(
                fine := expert_block(replace(g, moe_intermediate_size=v.width), tp, block), str):
            return i, "vision_experts", fine
    return None
