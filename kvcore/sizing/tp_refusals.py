"""What vLLM refuses to build of a model over ``tp`` tensor-parallel ranks, in the order it meets
them: attention heads, the vision tower's heads and MLP width, experts, KV heads, the vision
tower's fp8 blocks, AWQ's and GPTQ's input shards, the language model's fp8 blocks. Each
refusal names `tensor_parallel_size` (and `mm_encoder_tp_mode` where holding the tower whole
gets past it).
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.fp8_shapes import refusal as fp8_refusal
from kvcore.models.fp8_vision import refusal as fp8_vision_refusal
from kvcore.models.geometry import ModelGeometry
from kvcore.models.mimo_v2 import MIMO_V2_TYPES, refuse_mimo_tp
from kvcore.models.moe_required import refuse_expert_split
from kvcore.models.nemotron_nas import refuse_nas_tp
from kvcore.models.pangu_v2 import refuse_sink_tp
from kvcore.models.quantization import check_build
from kvcore.models.tower_int_quant import LLM_FIRST
from kvcore.models.zamba2_weights import refuse_zamba2_tp

# Model types whose MoE blocks refuse more TP ranks than experts (vLLM 0.33)
EXPERTS_PER_RANK_TYPES = ("qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text",
                          "mimo_v2_flash", "mimo_v2", "laguna", "step3p5", "ernie4_5_moe")
# Model types whose layers take query heads of their own, and the key that gives them: their
# attention asserts its layer's heads split, bare (`assert self.total_num_heads % tp_size ==
# 0`: laguna.py, step3p5.py), so a layer the top-level count does not speak for can refuse
OWN_HEADS_KEYS = {"laguna": "num_attention_heads_per_layer",
                  "step3p5": "a sliding layer's own count"}


def refuse_tp(g: ModelGeometry, tp: int, dtype_given: bool) -> None:
    """Raise vLLM's first refusal of model ``g`` on ``tp`` ranks (none: return);
    `dtype_given`: ``--dtype`` was typed (a ModelOpt dtype refusal names it)."""
    if g.model_type != "custom" and g.num_attention_heads % tp:
        # vLLM's ModelConfig.verify_with_parallel_config refuses to start (explicit geometry
        # gives no attention head count to check)
        raise InputError(f"{g.name}'s {g.num_attention_heads} attention heads must be divisible "
                         f"by it, as vLLM requires; got {tp}", field="tensor_parallel_size")
    if g.dory is not None and tp != 1:     # (DoryForCausalLM's own ValueError as it is built)
        raise InputError(f"{g.name}: vLLM builds Dory on one rank only ('Dory currently "
                         f"supports tensor_parallel_size=1 only'); got {tp}",
                         field="tensor_parallel_size")
    if g.vision_heads % tp:
        # (its encoder's attention splits them: vLLM asserts "N is not divisible by TP")
        raise InputError(f"{g.name}'s vision tower has {g.vision_heads} attention heads, which "
                         "must be divisible by it, as vLLM requires; got "
                         f"{tp}", field="tensor_parallel_size",
                         remedy=(("mm_encoder_tp_mode", "data holds it whole on every rank")
                                 if g.vision_data_parallel else None))
    if g.vision_mlp_width % tp:
        # (Qwen2.5-VL's 3,420 at TP 8: its gate_up_proj asserts every width splits, unworded)
        raise InputError(f"{g.name}'s vision tower's MLP is {g.vision_mlp_width} wide (a "
                         "rank's shard of it must be whole), which must be divisible by it, as "
                         f"vLLM requires; got {tp}", field="tensor_parallel_size",
                         remedy=("mm_encoder_tp_mode", "data holds it whole on every rank"))
    if g.model_type in MIMO_V2_TYPES:
        refuse_mimo_tp(g, tp)   # (its sliding layers' own heads, built before the MoE block)
    if g.model_type in OWN_HEADS_KEYS:
        _refuse_layer_heads(g, tp)
    if g.model_type in EXPERTS_PER_RANK_TYPES and any(g.moe_layers) and tp > g.num_experts:
        # (their sparse MoE blocks raise it as they are built: qwen2_moe.py, qwen3_moe.py,
        # qwen3_next.py, whose block Qwen3.5's MoE layers reuse; mimo_v2.py, laguna.py,
        # step3p5.py; ernie45_moe.py:150)
        raise InputError(f"{g.name} has {g.num_experts} experts, fewer than the tensor parallel "
                         f"ranks, and vLLM refuses to build it: 'Tensor parallel size {tp} is "
                         f"greater than the number of experts {g.num_experts}.'; got {tp}",
                         field="tensor_parallel_size")
    refuse_expert_split(g, tp)      # (DeepSeek-V2's 1,407-wide experts at TP 2 or 4)
    if g.mamba is not None and g.mamba.version == "gdn" and g.mamba.n_heads % tp:
        # (a Gated DeltaNet layer splits its value heads as it is built: Qwen3.5's b and a
        # projections, one output a head each, assert it bare (linear.py's
        # MergedColumnParallelLinear), Qwen3-Next's fused one where 2 x heads does not split,
        # else qwen_gdn_linear_attn.py's divide() says "N is not divisible by TP": no one set
        # of words to quote. Qwen3.5-MoE at 1 value head, TP 4: the size fuzz, s0-0076)
        raise InputError(f"{g.name}'s {g.mamba.n_heads} Gated DeltaNet value heads "
                         "(linear_num_value_heads) do not split over the ranks, and vLLM refuses "
                         f"to build it; got {tp}", field="tensor_parallel_size")
    if g.mamba is not None and g.mamba.version == "kda" and g.mamba.n_heads % tp:
        # (Kimi Linear's KDA layer asserts it: kimi_gdn_linear_attn.py, num_heads % tp_size)
        raise InputError(f"{g.name}'s {g.mamba.n_heads} Kimi Delta Attention heads "
                         "(linear_attn_config.num_heads) do not split over the ranks, and vLLM "
                         f"refuses to build it; got {tp}", field="tensor_parallel_size")
    if g.pangu_sinks is not None:   # (its sink attention splits KV heads, never replicates)
        refuse_sink_tp(g, g.pangu_sinks, tp)
    kv = g.num_kv_heads
    if g.model_type == "gpt_oss" and 0 < kv < tp:
        # (gpt_oss.py:156 gives a rank num_key_value_heads // tp KV heads, 0 below one a rank,
        # where other classes replicate them; its Attention then divides by zero: the size fuzz)
        raise InputError(f"{g.name}'s {kv} KV heads are fewer than the ranks, and vLLM refuses "
                         f"to build it (ZeroDivisionError: integer modulo by zero); got {tp}",
                         field="tensor_parallel_size")
    if g.mla is None and kv > 0 and (tp % kv if tp >= kv else kv % tp):
        # QKVParallelLinear splits the KV heads (or replicates each over tp / heads ranks):
        # vLLM asserts either division is exact (8 KV heads at tp 3 were sized as 2 a rank)
        whose = "--kv-heads'" if g.model_type == "custom" else f"{g.name}'s"
        raise InputError(f"{whose} {kv} KV heads and it must divide one another, as vLLM "
                         f"requires; got {tp}", field="tensor_parallel_size")
    if g.nas is not None:       # (Nemotron-NAS's other layers' KV heads)
        refuse_nas_tp(g.nas, g.name, tp)
    refuse_zamba2_tp(g, tp)     # (its shared blocks' adapters and MLP)
    if g.architecture not in LLM_FIRST:
        _refuse_tower_fp8(g, tp)
    check_build(g, tp, dtype_given)  # (AWQ's, ModelOpt's shards)
    fp8_refused = fp8_refusal(g, tp)
    if fp8_refused is not None:
        # (vLLM's validate_fp8_block_shape: a shard of a block-quantised linear must be whole
        # blocks; its refusal quoted, with where it stops)
        layer, module, why = fp8_refused
        raise InputError(f"{g.name}'s fp8 weight blocks {list(g.fp8_block or ())} do not split "
                         f"over it (layer {layer}'s {module}), and vLLM refuses to build it: "
                         f"\"{why}\"; got {tp}", field="tensor_parallel_size")
    _refuse_tower_fp8(g, tp)    # (MiniCPM-V's tower, built after its language model)


def _refuse_layer_heads(g: ModelGeometry, tp: int) -> None:
    """vLLM's refusal of the first layer whose own query heads ``tp`` does not split (their KV
    heads are the config's, checked above): an AssertionError without words
    (tests/data/weights_census/layer_heads_tp/, mm_step3/step3p5/, TP 8)."""
    for i, heads in enumerate(g.layer_heads):
        if heads % tp:
            raise InputError(f"{g.name}'s layer {i} has {heads} attention heads "
                             f"({OWN_HEADS_KEYS[g.model_type]}), which do not split over the "
                             "ranks, and vLLM refuses to build it (a bare AssertionError: its "
                             f"attention asserts total_num_heads % tp_size == 0); got {tp}",
                             field="tensor_parallel_size")
        if g.moe_layers[i] and tp > g.num_experts:
            return      # (the layer's MoE block refuses next, before the later layers are built)


def _refuse_tower_fp8(g: ModelGeometry, tp: int) -> None:
    """vLLM's refusal of the vision tower's fp8 blocks (built before the language model but
    for `LLM_FIRST`'s)."""
    vision_refused = fp8_vision_refusal(g, tp)
    if vision_refused is not None:
        module, why = vision_refused
        raise InputError(f"{g.name}'s fp8 weight blocks {list(g.fp8_block or ())} do not split "
                         f"over it (the vision tower's {module}), and vLLM refuses to build it: "
                         f"\"{why}\"; got {tp}", field="tensor_parallel_size",
                         remedy=(("mm_encoder_tp_mode",
                                  "data holds the tower whole on every rank")
                                 if g.vision_data_parallel else None))
