"""PaliGemma's vision tower and projector as vLLM 0.33 builds them
(`PaliGemmaForConditionalGeneration`, paligemma.py), per TP rank: the whole SigLIP encoder with
its post LayerNorm and no pooling head (`kvcore.models.clip_siglip`), and
`PaliGemmaMultiModalProjector`, one biased nn.Linear from the vision hidden size to
``projection_dim`` (PaliGemmaConfig's top-level key, default 2048, which it writes into the
vision config), whole on every rank. The class does not take ``--mm-encoder-tp-mode data``.
Checked per rank against vLLM's classes on the meta device
(tests/data/weights_census/llava_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim

# PaliGemmaConfig's default vision_config (transformers 5.20.2), for a config without one
_ABSENT = {**SIGLIP_DEFAULTS, "hidden_size": 1152, "intermediate_size": 4096,
           "num_hidden_layers": 27, "num_attention_heads": 16, "patch_size": 14}


def paligemma_vision_params(cfg: dict[str, Any], source: str) -> VisionParams:
    v = vision_config(cfg, source)
    defaults = SIGLIP_DEFAULTS if cfg.get("vision_config") is not None else _ABSENT
    enc = encoder("siglip", v, defaults, vision_dim(v, defaults, "num_hidden_layers", source),
                  True, source)
    proj = cfg.get("projection_dim", 2048)
    if not isinstance(proj, int) or isinstance(proj, bool) or not 1 <= proj < 2**31:
        raise InputError(f"expected an integer >= 1, got {clipped(proj)}", path=source or None,
                         field="projection_dim")
    projector = vision_dim(v, defaults, "hidden_size", source) * proj + proj
    # (the encoder's linears take the quant_config; the projector, built without it, not)
    return VisionParams(enc.total + projector, enc.whole + projector, enc.heads, ("image",),
                        linears=enc.linears, buffers=enc.buffers)
