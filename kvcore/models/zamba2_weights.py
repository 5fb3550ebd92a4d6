"""A Zamba2's parameters on one tensor-parallel rank as vLLM 0.33's zamba2.py builds them, and
the splits it refuses (checked on the meta device at TP 1, 2 and 4, every rank:
tests/data/zamba2/census.json).

Once: the embedding (the LM head is tied to it, whatever the config says), the final norm and
``num_mem_blocks`` shared transformer blocks, each a norm over 2 x hidden_size, q, k and v
projected from it (``attention_hidden_size`` in, every head a KV head), o_proj, a norm and a
GELU-gated MLP (biases with ``add_bias_linear``). A use of a block (an entry of
``hybrid_layer_ids``) adds its own LoRA adapters of ``adapter_rank``: the MLP's gate and up
always, q, k and v's with ``use_shared_attention_adapter``. A hybrid layer adds a linear,
hidden x hidden, whole on every rank. Every layer: a norm and a Mamba2 mixer (its conv bias
with ``use_conv_bias``, its projections' biases with ``add_bias_linear``).
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger


def zamba2_ledger(g: ModelGeometry, tp: int) -> Ledger:
    """One of ``tp`` ranks' parameters of Zamba2 model ``g`` (no pipeline stages: vLLM's
    Zamba2 is not `SupportsPP`)."""
    z, m = g.zamba, g.mamba
    assert z is not None and m is not None
    h, a, inter, rank = g.hidden_size, z.attention_hidden, g.intermediate_size, z.adapter_rank
    led = Ledger()
    # (the shared blocks a hybrid layer uses: zamba2.py cycles through them as it builds the
    # hybrid layers, and a block no layer takes is no submodule: none without a hybrid layer)
    blocks = min(z.mem_blocks, g.count("parallel"))
    led.model += rp.vocab_rows(g, tp) * h + h + blocks * 3 * h      # (and the norms)
    # q, k, v (a x 3a, split by heads) and o_proj; gate_up and down
    led.layer += blocks * (a * 3 * a // tp + a // tp * h + 3 * h * inter // tp)
    if z.linear_bias:
        led.model += blocks * (2 * inter // tp + h)   # (down_proj's bias whole)
    # a use's LoRAs: A (rank split, gathered) and B (the output split)
    mlp_lora = rank // tp * h + 2 * inter // tp * rank
    qkv_lora = 3 * (rank // tp * a + a // tp * rank) if z.attention_adapters else 0
    # (block b holds the adapters of the uses i with i % mem_blocks == b: the attached blocks')
    adapters = sum(1 for i in range(z.uses) if i % z.mem_blocks < blocks)
    led.layer += adapters * (mlp_lora + qkv_lora)
    led.layer += g.count("parallel") * h * h
    for _ in range(g.num_layers):
        led.model += h
        rp.mamba(g, tp, led)
    di = m.d_inner // tp
    conv = di + 2 * rp.on_rank(m.n_groups, tp) * m.d_state   # (the conv's width on a rank)
    per_layer = (0 if m.conv_bias else -conv) + (di + conv + m.n_heads // tp + h
                                                if z.linear_bias else 0)
    led.model += g.num_layers * per_layer
    return led


def refuse_zamba2_tp(g: ModelGeometry, tp: int) -> None:
    """vLLM's `ensure_divisibility` as the first shared block is built: its q, k, v adapters'
    rank (with them), the MLP's width, its adapter's rank (the Mamba mixers' refusals come
    after, `kvcore.models.mamba_spec`)."""
    z = g.zamba
    if z is None:
        return
    # (a block no layer uses builds no adapters: none when hybrid_layer_ids is empty)
    checks = ((z.adapter_rank, "adapter_rank") if z.attention_adapters and z.uses else None,
              (g.intermediate_size, "intermediate_size"),
              (z.adapter_rank, "adapter_rank") if z.uses else None)
    for n, key in filter(None, checks):
        if n % tp:
            raise InputError(f"{g.name}'s {key} {n} does not split over it, and vLLM refuses "
                             f"to build its shared blocks: \"{n} is not divisible by {tp}\"; got "
                             f"{tp}", field="tensor_parallel_size")
