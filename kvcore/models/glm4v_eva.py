"""GLM-4V's EVA2-CLIP tower (``GLM4VForCausalLM``, THUDM/glm-4v-9b: vLLM 0.33's glm4v.py), per
TP rank, beside its ChatGLM language model (`kvcore.models.classic_blocks`).

`EVA2CLIPModel`: a biased patch convolution, a class embedding and ``num_positions`` position
embeddings, ``num_hidden_layers`` plain ViT layers (`vit_layer`), a biased 2 x 2 convolution to
the text hidden size, the projector `EVA2CLIPGLU` (a replicated hidden x hidden
``linear_proj``, a LayerNorm, the merged gate and up projections ``ffn_hidden_size`` wide,
column-parallel, and ``dense_4h_to_h``, row-parallel: the text model's widths), and ``boi`` and
``eoi``. vLLM reads ``vision_config`` as it is (a Namespace: every key needed). Built beside
every pipeline stage's layers (GLM4VModel). No ``--mm-encoder-tp-mode data``. A ChatGLM
architecture with a ``vision_config`` is refused, as vLLM refuses it. Checked per rank against
vLLM's class on the meta device (tests/data/weights_census/mm_step3/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError
from kvcore.models.vision_keys import VisionParams, config_int, tower_config, vit_layer

GLM4V = "GLM4VForCausalLM"


def glm4v_eva_params(cfg: dict[str, Any], arch: str, text_hidden: int,
                     source: str) -> VisionParams:
    """The tower of a ChatGLM config built as `GLM4V` (none for the text-only class)."""
    if arch != GLM4V:
        if "vision_config" in cfg:     # (chatglm.py's own refusal: hasattr, null or not)
            raise InputError(f"architecture {arch!r} with a 'vision_config': vLLM 0.33 "
                             "refuses the text-only class for a vision checkpoint: name "
                             f"\"architectures\": [\"{GLM4V}\"] (vLLM's --hf-overrides)",
                             path=source or None, field="architectures")
        return VisionParams(0, 0)
    v = tower_config(cfg, "vision_config", source)

    def key(k: str) -> int:
        return config_int(v, k, None, f"vision_config.{k}", source)

    d, patch, heads = key("hidden_size"), key("patch_size"), key("num_heads")
    ffn = config_int(cfg, "ffn_hidden_size", 13696, "ffn_hidden_size", source)
    th = text_hidden
    embed = key("in_channels") * d * patch * patch + d + d + key("num_positions") * d
    whole, split = vit_layer(d, key("intermediate_size"))
    layers = key("num_hidden_layers")
    # (linear_proj and its norm, the 2 x 2 convolution, boi and eoi; the GLU's split part)
    kept = embed + layers * whole + th * th + 2 * th + d * th * 4 + th + 2 * th
    return VisionParams(kept + layers * split + 3 * ffn * th, kept, heads, ("image",))
