"""Command A Vision's vision tower and projector, as vLLM 0.33 builds them for
`Cohere2VisionForConditionalGeneration` (cohere2_vision.py) beside Cohere2's text model.

The tower: the whole SigLIP encoder (`SiglipVisionModel`, every layer, so with its post
LayerNorm; no pooling head: `kvcore.models.clip_siglip`). `Cohere2VisionMultiModalProjector`:
a pixel shuffle (no parameters) to ``vision hidden x downsample_factor^2``, ``linear_1`` a
biased MergedColumnParallelLinear to two halves of ``alignment_intermediate_size`` (SwiGLU's
gate and up), ``linear_2`` a biased RowParallelLinear from one half to the text width; both
built without the quant_config. TP splits the parallel weights and the column-parallel
biases; the embeddings, norms and row-parallel biases stay whole on every rank. The class does
not take ``--mm-encoder-tp-mode data`` (vLLM falls back to weights). Checked per rank against
vLLM's classes on the meta device (tests/data/weights_census/mm_cohere/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

# Cohere2VisionConfig's default vision_config (transformers 5.20.2), for a config without one;
# a vision_config given takes SiglipVisionConfig's defaults for the keys it leaves out
_ABSENT = {**SIGLIP_DEFAULTS, "hidden_size": 1152, "num_hidden_layers": 27, "image_size": 512}
# Cohere2VisionConfig's top-level defaults
_TOP = {"alignment_intermediate_size": 36864, "downsample_factor": 2}


def cohere2_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    if v.get("model_type", "siglip_vision_model") != "siglip_vision_model":
        raise InputError(f"{clipped(v.get('model_type'))}: kvcli reads Command A Vision's "
                         "siglip_vision_model tower only", path=source or None,
                         field="vision_config.model_type")
    defaults = SIGLIP_DEFAULTS if cfg.get("vision_config") is not None else _ABSENT
    enc = encoder("siglip", v, defaults, vision_dim(v, defaults, "num_hidden_layers", source),
                  True, source)

    def top(key: str) -> int:
        return vision_dim(cfg, _TOP, key, source, key_of="")

    wide = vision_dim(v, defaults, "hidden_size", source) * top("downsample_factor") ** 2
    # (vLLM halves alignment_intermediate_size, flooring, for each of the gate and up halves)
    half = top("alignment_intermediate_size") // 2
    if half == 0:
        raise InputError("expected an integer >= 2, got 1: vLLM halves it into SwiGLU's gate "
                         "and up", path=source or None, field="alignment_intermediate_size")
    h = text_hidden
    split = wide * 2 * half + 2 * half + half * h
    return VisionParams(enc.total + split + h, enc.whole + h, enc.heads, ("image",),
                        linears=enc.linears, buffers=enc.buffers)
