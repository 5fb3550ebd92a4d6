"""A vision tower's linears under a ModelOpt checkpoint, as vLLM 0.33 builds them on a rank (the
classes of `kvcore.models.tower_int_quant.PREFIXES`, whose towers take the quant_config).

ModelOptQuantConfigBase.get_quant_method leaves a linear unquantised when the exclude list
names it (`kvcore.models.modelopt_rank.excluded`) or, whatever the list, when its path holds
``vision_tower``, ``vision_model`` or ``vit_large_projector`` (a rule kept for checkpoints of
ModelOpt before 0.39): the LLaVA family's, Mistral 3's and PaliGemma's encoders stay in the
model dtype, LLaVA's and Mistral 3's projector ``linear_1`` / ``linear_2`` and the towers at
``visual.`` (GLM-4.1V / 4.5V, Qwen3-VL) are quantised by the config's algorithm
(`kvcore.models.modelopt_quant.linear_bytes`), and an input shard vLLM refuses at the TP size
is refused in its words, naming the tower's layer (NVFP4's 16s: Qwen3-VL's 1,152-wide blocks
at TP 2 and 4). A mixed-precision table is not modelled here (`modelopt_rank.modelled`).
Census tests/data/weights_census/quant_towers/ and quant2/.
"""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.geometry import ModelGeometry
from kvcore.models.modelopt_quant import ModelOpt, linear_bytes, refusal
from kvcore.models.modelopt_rank import excluded, modelled
from kvcore.models.tower_cast import cast_bytes, cast_paths
from kvcore.models.tower_int_quant import takes_quant
from kvcore.models.vision_keys import VisionLinear, built_at, rank_shape
from kvcore.specs import DTYPE_BYTES

# (the algorithms whose weights are fp8 beside float32 scales)
_FP8 = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO")
# (get_quant_method's hard-coded prefixes)
_VISION_NAMES = ("vision_tower", "vision_model", "vit_large_projector")


def _quantised(g: ModelGeometry, q: ModelOpt) -> list[VisionLinear]:
    """The tower's linears vLLM quantises (whole, before TP)."""
    return [lin for lin in g.vision_linears
            if not any(n in lin.path for n in _VISION_NAMES) and not excluded(g, q, lin.path)]


def _on_rank(g: ModelGeometry, tp: int,
             loaded: bool = True) -> list[tuple[str, tuple[int, ...], int, ModelOpt]]:
    """The tower's quantised linears on a rank of `tp`: none where it is not `loaded` (still
    constructed, and refused, where it is skipped)."""
    q = modelled(g)
    if q is None or not takes_quant(g, loaded):
        return []
    out = []
    for lin in built_at(tuple(_quantised(g, q)), tp):
        parts, k = rank_shape(lin, tp)
        out.append((lin.path, parts, k, q))
    return out


def rank_bytes(g: ModelGeometry, tp: int) -> tuple[int, int]:
    """(parameters the quantised tensors replace, their bytes) of the tower on a rank."""
    dt = DTYPE_BYTES[g.dtype]
    moved = held = 0
    cast = cast_paths(g.vision_linears)
    for path, parts, k, q in _on_rank(g, tp):
        moved += sum(parts) * k
        b = linear_bytes(q, parts, k, dt)
        # (cast to the model dtype: an fp8 weight and its float32 scales)
        held += cast_bytes(b, sum(parts) * k, True, dt) if path in cast and q.algo in _FP8 \
            else b
    return moved, held


def check_tp(g: ModelGeometry, tp: int) -> None:
    """vLLM's refusal of a tower linear's input shard at `tp`, naming the option."""
    for path, _, k, q in _on_rank(g, tp, loaded=False):
        if why := refusal(q, k):
            raise InputError(f"{g.name}'s ModelOpt {q.algo} input shard does not fit at it (the "
                             f"vision tower's {path}), and vLLM refuses to build it: \"{why}\"; "
                             f"got {tp}", field="tensor_parallel_size")
