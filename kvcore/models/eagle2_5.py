"""Eagle 2.5's vision tower and projector, as vLLM 0.33 builds them for
`Eagle2_5_VLForConditionalGeneration` (eagle2_5_vl.py, siglip.py) beside its Qwen2
``text_config``.

SigLIP's encoder (`kvcore.models.clip_siglip`) cut to the layers ``select_layer`` reads
(negative: counted from the end, -1 the last), its post LayerNorm only where every layer is
built, no pooling head; ``mlp1``, whole on every rank: a LayerNorm over d x (1 /
``downsample_ratio``)^2 (the pixel shuffle), a biased nn.Linear to the text width and another
from it to itself. The class takes ``--mm-encoder-tp-mode data`` (the encoder whole on every
rank).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS, encoder
from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim


def eagle2_5_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)
    total = vision_dim(v, SIGLIP_DEFAULTS, "num_hidden_layers", source)
    select = cfg.get("select_layer", -1)
    if not isinstance(select, int) or isinstance(select, bool):
        raise InputError(f"expected an integer, got {select!r}", path=source or None,
                         field="select_layer")
    layers = total + select + 1 if select < 0 else select + 1
    if not 1 <= layers <= total:
        raise InputError(f"{select} selects none of the {total} vision layers (vLLM builds "
                         "the layers up to it)", path=source or None, field="select_layer")
    ratio = cfg.get("downsample_ratio", 0.5)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not 0 < ratio <= 1:
        raise InputError(f"expected a number in (0, 1], got {ratio!r}", path=source or None,
                         field="downsample_ratio")
    tower = encoder("siglip", v, SIGLIP_DEFAULTS, layers, layers == total, source)
    wide = vision_dim(v, SIGLIP_DEFAULTS, "hidden_size", source) * int(1 / ratio) ** 2
    mlp1 = 2 * wide + wide * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
    return tower._replace(total=tower.total + mlp1, whole=tower.whole + mlp1,
                          modalities=("image",), data_parallel=True)
