"""A multimodal fp8 checkpoint's vision tower as vLLM 0.33 builds it: the tower's linears that
take the model's quant_config (Qwen3.5's and Qwen3-VL's blocks and mergers, qwen3_vl.py;
Qwen2-VL's and Qwen2.5-VL's, `kvcore.models.qwen_vl`; Gemma 3's SigLIP encoder, siglip.py:
`VisionParams.linears`) are fp8 with their block scales, or per-tensor ones (one a shard),
like the language model's (`kvcore.models.fp8_scales`); the patch embeddings, position
embeddings, norms, biases and Gemma 3's projector stay in the model dtype.

* A linear the ignore list names is built unquantised (`kvcore.models.fp8_ignored`'s rule,
  vLLM's is_layer_skipped in "exact" mode, on the list renamed by the class's
  hf_to_vllm_mapper: the checkpoint's ``model.visual.`` is vLLM's ``visual.``,
  ``model.vision_tower.`` its ``vision_tower.``); a fused one (SigLIP's ``qkv_proj``) when it
  is named whole or all its shards (q/k/v_proj) are; some but not all and vLLM refuses to
  build the model.
* Each shard is checked against the block as the language model's are (`fp8_shapes`): the
  tower is built, on the meta device, even when ``--limit-mm-per-prompt`` /
  ``--language-model-only`` drop it, so its refusals stand then too; under
  ``--mm-encoder-tp-mode data`` its linears are not split (``disable_tp``) and never refused.

Checked per rank against vLLM's own classes (tests/data/weights_census/fp8/ and quant2/).
"""

from __future__ import annotations

from functools import partial

from kvcore.models.fp8_scales import scales, tensor_scales
from kvcore.models.fp8_shapes import linear_refusal
from kvcore.models.fused_shards import all_or_none, named_in_part
from kvcore.models.geometry import ModelGeometry
from kvcore.models.vision_keys import (
    VisionLinear,
    built_at,
    linears_loaded,
    rank_shape,
    split_at,
)


def _shard(lin: VisionLinear, tp: int) -> tuple[str, tuple[int, ...], int, str]:
    """The linear as one rank holds it (`kvcore.models.fp8_scales.Linear`)."""
    parts, inp = rank_shape(lin, tp)
    return lin.path, parts, inp, split_at(lin, tp) if tp > 1 else "replicated"


def rank_fp8(g: ModelGeometry, tp: int, cast: bool = False) -> tuple[int, int]:
    """(fp8 weights, float32 scales: block grids, else per tensor) of the tower's quantised
    linears on one rank (none where the tower is not loaded); those the class casts to the
    model dtype (`kvcore.models.tower_cast`) where `cast`, else the others."""
    if not linears_loaded(g.vision_params, g.vision_kept, g.vision_parts) or \
            g.quantization != "fp8":
        return 0, 0     # (AWQ / GPTQ / compressed-tensors: `kvcore.models.tower_int_quant`)
    shards = [_shard(lin, tp) for lin in built_at(g.vision_linears, tp) if lin.cast == cast]
    weights = sum(sum(parts) * inp for _, parts, inp, _ in shards)
    # (without weight_block_size: Fp8LinearMethod's per-tensor scales, one a shard)
    return weights, scales(shards, g.fp8_block) if g.fp8_block is not None else \
        tensor_scales(shards, g.fp8_static)


def tower_rank(g: ModelGeometry, tp: int) -> tuple[int, int, int]:
    """The vision tower's (and projector's) parameters on one TP rank of the first stage:
    (those in the model dtype, a cast linear's weights and scales among them, the fp8
    weights, the float32 ones: their block scales and the tower's own float32 parameters,
    none where it is not built); the weights estimate and `kvcli config`'s multimodal key
    both read it."""
    fp8, block_scales = rank_fp8(g, tp)
    cast_scales = rank_fp8(g, tp, cast=True)[1]
    heads, bound = g.vision_head_bound
    # (InternViT's attention, whole where TP does not divide its heads; a part's params that TP
    # splits only where it divides the part's heads: Qwen3-Omni's audio; never more than all of
    # the tower: skipped, or whole under --mm-encoder-tp-mode data)
    kept = sum(p.tp_fallback[1] for p in g.vision_parts if p.total and p.tp_fallback[0] % tp)
    whole = min(g.vision_params, g.vision_whole + (bound if heads % tp else 0) + kept)
    # (fewer KV heads than ranks: one whole on each rank, not kv / tp of them: Molmo2's ViT)
    kv, head = g.vision_kv_floor if 0 < g.vision_kv_floor[0] < tp else (0, 0)
    if whole == g.vision_params:    # (nothing split: skipped, or held whole)
        kv = head = 0
    params = whole + head + (g.vision_params - whole - kv * head) // tp
    fp32 = g.vision_fp32 if g.vision_params else 0      # (skipped or a draft: none)
    if g.vision_in_float32:     # (Nemotron Nano VL / Omni's: `kvcore.models.radio`)
        return 0, fp8, block_scales + fp32 + params - fp8 + cast_scales
    return params - fp8 + cast_scales, fp8, block_scales + fp32


def refusal(g: ModelGeometry, tp: int) -> tuple[str, str] | None:
    """The first tower linear (its vLLM path, vLLM's words) whose shard is not whole blocks."""
    if g.fp8_block is None:
        return None
    for lin in built_at(g.vision_linears, tp):
        why = linear_refusal(_shard(lin, tp), tp, g.fp8_block)
        if why:
            return lin.path, why
    return None


def quantised(linears: tuple[VisionLinear, ...], written: tuple[str, ...],
              renamed: tuple[str, ...], key: str, source: str) -> tuple[VisionLinear, ...]:
    """The tower's linears vLLM quantises: those the ignore list (`written` in the config,
    `renamed` as vLLM matches it, entry for entry) does not name; InputError for a fused one
    named in part."""
    as_written = dict(zip(renamed, written, strict=True))
    out = []
    for lin in linears:
        proj = lin.path.rsplit(".", 1)[1]
        if lin.path in as_written:
            continue
        if not lin.shards:
            out.append(lin)
            continue
        paths = [lin.path[: -len(proj)] + s for s in lin.shards]
        named = [p in as_written for p in paths]
        if not all_or_none(named, partial(named_in_part, as_written, paths, named, lin.shards),
                           lin.path, source, f"quantization_config.{key}"):
            out.append(lin)
    return tuple(out)
