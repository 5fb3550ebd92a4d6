"""vLLM 0.33's multimodal serving options that change the weights a rank holds, and so the KV
blocks that fit: ``--limit-mm-per-prompt``, ``--language-model-only`` and
``--mm-encoder-tp-mode`` (config/multimodal.py `MultiModalConfig`, config/model.py).

What vLLM builds with them (recorded per rank in tests/data/weights_census/):
* a tower whose modalities all have limit 0 is not built (interfaces.py `_mark_tower_model`:
  Gemma 3's SigLIP tower and its multi-modal projector, modality image; Qwen3.5's vision
  tower with its mergers, image and video; Qwen3-VL's, Qwen2-VL's and Qwen2.5-VL's the same).
  ``--language-model-only`` sets every limit to 0. A model with several towers (Gemma 3n's and
  4's vision and audio) drops each on its own; Gemma 4 Unified's embedders are built whatever
  the limits (outside `_mark_tower_model`). The tower is still constructed on the meta device,
  so its heads (and Qwen2.5-VL's MLP width) must still divide TP;
* ``--mm-encoder-tp-mode data`` keeps the whole tower on every TP rank (`disable_tp`), no head
  split, where the model class supports it (Qwen3.5, Qwen3-VL, Qwen2-VL, Qwen2.5-VL, GLM-4.xV,
  Kimi-VL, MiniCPM-V 2.5 on, MiniCPM-o: `VisionParams.data_parallel`); Gemma 3's
  does not and vLLM falls back to "weights" with a warning;
* on a multimodal class whose tower kvcli does not count (`kvcore.models.multimodal_classes`)
  they change nothing kvcli counts;
* on a text-only model vLLM builds no multimodal config: the options change nothing; a limit
  for a modality the model lacks is read by nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvcore.mm_options import MMOptions
from kvcore.models.fp8_vision import tower_rank
from kvcore.models.geometry import ModelGeometry
from kvcore.models.multimodal_classes import MULTIMODAL_CLASSES
from kvcore.specs import DTYPE_BYTES


@dataclass(frozen=True, slots=True)
class MMState:
    """What vLLM builds with the options: ``tower`` "built", "skipped" or "none" (no tower);
    ``mode`` the encoder's TP mode vLLM runs ("weights" after its fallback); ``limits`` the
    tower's modalities' limits (vLLM's `get_limit_per_prompt`); ``notes`` the options that
    change nothing, as (the option's field, why)."""
    tower: str
    mode: str
    limits: tuple[tuple[str, int], ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    language_model_only: bool = False


def apply_mm(g: ModelGeometry, opts: MMOptions | None) -> tuple[ModelGeometry, MMState]:
    """The geometry with the vision tower vLLM builds under `opts`, and what it did."""
    opts = opts or MMOptions()
    if not g.vision_modalities:
        # (each option given: vLLM builds no multimodal config, reads none of them)
        why = (f"no effect on {g.name}, which has no vision tower kvcli counts (on a text-only "
               "model vLLM builds no multimodal config)")
        if g.architecture in MULTIMODAL_CLASSES:
            why = (f"no effect on kvcli's count of {g.name}, whose {g.architecture} tower it "
                   "does not count either way")
        given = (("limit_mm_per_prompt", bool(opts.limits)),
                 ("language_model_only", opts.language_model_only),
                 ("mm_encoder_tp_mode", opts.mm_encoder_tp_mode != "weights"))
        said = tuple((k, why) for k, on in given if on)
        return g, MMState("none", opts.mm_encoder_tp_mode, (), said, opts.language_model_only)
    notes: list[tuple[str, str]] = []
    lacks = [m for m, _ in opts.limits if m not in g.vision_modalities]
    if lacks:
        notes.append(("limit_mm_per_prompt", (f"{', '.join(lacks)}: no effect, {g.name} takes "
                      f"{', '.join(g.vision_modalities)} only (vLLM reads no other limit)")))
    mode = opts.mm_encoder_tp_mode
    if mode == "data" and not g.vision_data_parallel:
        notes.append(("mm_encoder_tp_mode", (f"data: {g.name}'s class does not support it; "
                      "vLLM falls back to weights (the tower split over TP)")))
        mode = "weights"
    if mode == "data":
        # every rank holds the whole tower and splits no head (tp_size 1 inside it); Llama 4's
        # projector, outside the encoder, stays split
        g = replace(g, vision_whole=g.vision_params - g.vision_data_split, vision_heads=0,
                    vision_mlp_width=0, vision_parts=tuple(  # (MiniCPM-o's towers, whole)
                        p._replace(whole=p.total) for p in g.vision_parts),
                    vision_linears=tuple(lin._replace(split="replicated")
                                         for lin in g.vision_linears))
    limits = tuple((m, opts.limit(m)) for m in g.vision_modalities)
    if g.vision_parts:      # (a part of no modality: built whatever the limits)
        built = [p for p in g.vision_parts
                 if not p.modalities or any(opts.limit(m) for m in p.modalities)]
        g = replace(g, vision_params=sum(p.total for p in built), vision_whole=sum(
            p.whole for p in built), vision_buffers=sum(p.buffers for p in built),
            vision_parts=tuple(built) + tuple(p._replace(total=0, whole=0, buffers=0)
                                              for p in g.vision_parts if p not in built),
            # (Qwen3-Omni's deepstack scratch goes with its vision tower)
            vision_deepstack=g.vision_deepstack if any(
                "image" in p.modalities for p in built) else 0)
        # (Gemma 4 Unified: no tower at all, its embedders only)
        tower = ("none" if not any(p.modalities for p in g.vision_parts) else "built"
                 if any(p.modalities for p in built) else "skipped")
        return g, MMState(tower, mode, limits, tuple(notes), opts.language_model_only)
    if all(n == 0 for _, n in limits):
        # (constructed on the meta device and dropped: its heads still had to divide TP)
        # (LLaVA-NeXT's image_newline, a plain Parameter, stays: `VisionParams.kept`)
        return (replace(g, vision_params=g.vision_kept, vision_whole=g.vision_kept,
                        vision_buffers=0),
                MMState("skipped", mode, limits, tuple(notes), opts.language_model_only))
    return g, MMState("built", mode, limits, tuple(notes), opts.language_model_only)


def vision_rank_bytes(g: ModelGeometry, tp: int) -> int:
    """The tower's (and projector's) bytes on one TP rank of the first stage (an fp8
    checkpoint's tower linears at 1 byte a weight with their float32 scales)."""
    plain, fp8, scales = tower_rank(g, tp)
    return plain * DTYPE_BYTES[g.dtype] + fp8 + 4 * scales
