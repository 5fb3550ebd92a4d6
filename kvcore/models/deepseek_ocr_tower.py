"""The vision towers vLLM 0.33 builds for DeepSeek-OCR (`DeepseekOCRForCausalLM`,
deepseek_ocr.py) beside its DeepSeek-V2 language model (read from ``language_config``:
`kvcore.models.deepseek_vl2.language_as_text`), loaded on the first pipeline stage. Their sizes
are fixed in vLLM's code, whatever ``vision_config`` says; only the projector reads the config.

* SAM ViT-B (deepencoder.py `build_sam_vit_b`): a biased 16 x 16 patch Conv2d to 768, a
  64 x 64 position table, 12 blocks (two LayerNorms, a biased qkv and proj, relative position
  tables 2 x (2 s - 1) x 64 with s 14 in the windowed blocks and 64 in the global ones 2, 5,
  8, 11, a biased 3,072-wide MLP), the neck (a 1 x 1 and a 3 x 3 conv to 256, each followed by
  a LayerNorm2d) and two 3 x 3 convs 256 -> 512 -> ``last_conv_output`` (1,024), no biases.
  All plain torch modules: whole on every rank.
* CLIP-L/14 at 224 (`DeepCLIPVisionTransformer`: vLLM's CLIP encoder, 24 layers 1,024 wide,
  16 heads, MLP 4,096; a class embedding, no conv bias, pre_layrnorm, no post norm; 257 int64
  ``position_ids``): `kvcore.models.clip_siglip.encoder`, split over TP as there.
* The projector (`MlpProjector`: `kvcore.models.deepseek_vl2.projector_params`) and
  ``image_newline`` and ``view_seperator`` (``n_embed`` each, plain Parameters that stay when
  the tower is dropped, as DeepSeek-VL2's).
DeepSeek-OCR-2 (`DeepseekOCR2ForCausalLM`, deepseek_ocr2.py): the same SAM with its last conv
896 wide, then in place of CLIP transformers' own Qwen2Model as an encoder (deepencoder2.py:
24 layers 896 wide, 14 heads, 2 KV heads, MLP 4,864, no token embedding; its float32
``inv_freq`` and ``original_inv_freq``), two query tables (144 and 256 rows), whole on every
rank; only ``view_seperator`` beside the projector.
No ``--mm-encoder-tp-mode data`` (vLLM falls back to weights). Checked per rank against vLLM's
class on the meta device (tests/data/weights_census/mm_ocr/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.clip_siglip import CLIP_DEFAULTS, encoder, encoder_linears
from kvcore.models.deepseek_vl2 import projector_params
from kvcore.models.geometry import ModelGeometry
from kvcore.models.vision_keys import VisionParams, tower_config

# deepseek_ocr.py's CLIPVisionConfig
CLIP_L = {**CLIP_DEFAULTS, "hidden_size": 1024, "intermediate_size": 4096,
          "num_attention_heads": 16, "num_hidden_layers": 24, "image_size": 224,
          "patch_size": 14}
# SAM ViT-B: width, blocks, MLP width, patch, image side, window, the global blocks
_D, _BLOCKS, _MLP, _PATCH, _IMAGE, _WINDOW, _GLOBAL = 768, 12, 3072, 16, 1024, 14, 4


def sam_vit_b(last_conv_output: int) -> int:
    """SAM ViT-B's parameters as deepencoder.py builds it (its last conv `last_conv_output`
    wide)."""
    grid, head = _IMAGE // _PATCH, _D // 12
    embed = 3 * _PATCH * _PATCH * _D + _D + grid * grid * _D
    block = 4 * _D + 3 * _D * _D + 3 * _D + _D * _D + _D + 2 * _D * _MLP + _MLP + _D
    rel_pos = (_BLOCKS - _GLOBAL) * 2 * (2 * _WINDOW - 1) * head + _GLOBAL * 2 * (
        2 * grid - 1) * head
    neck = _D * 256 + 2 * 256 + 256 * 256 * 9 + 2 * 256
    return embed + _BLOCKS * block + rel_pos + neck + 256 * 512 * 9 + 512 * last_conv_output * 9


def deepseek_ocr_params(cfg: dict[str, Any], source: str) -> VisionParams:
    """SAM, CLIP-L, the projector and the two separators of a DeepSeek-OCR config."""
    tower_config(cfg, "vision_config", source)      # (vLLM's config class reads it: an object)
    projector, n = projector_params(cfg, source)
    clip = encoder("clip", CLIP_L, CLIP_L, CLIP_L["num_hidden_layers"], False, source)
    whole = sam_vit_b(1024) + clip.whole + projector + 2 * n
    total = whole + clip.total - clip.whole
    # (the CLIP encoder's linears, at the prefix vLLM gives them)
    linears = encoder_linears(CLIP_L["num_hidden_layers"], CLIP_L["hidden_size"],
                              CLIP_L["intermediate_size"], True, "vision_model.encoder")
    return VisionParams(total, whole, clip.heads, ("image",), False, linears,
                        kept=2 * n, buffers=clip.buffers)


# the classes built by deepseek_ocr.py's DeepseekOCRForCausalLM.__init__ (Unlimited-OCR's too)
_OCR_CLASSES = ("DeepseekOCRForCausalLM", "UnlimitedOCRForCausalLM")


def stage_kept(g: ModelGeometry) -> int:
    """The parameters a pipeline stage after the first holds of `g`'s tower: DeepSeek-OCR's
    ``image_newline`` and ``view_seperator`` (plain Parameters its __init__ makes on every
    stage, the tower itself the first stage's: tests/data/refused_lifted/pp/), else none."""
    return g.vision_kept if g.architecture in _OCR_CLASSES else 0


# deepencoder2.py's Qwen2 encoder: layers, width, heads, KV heads, MLP width
_Q_LAYERS, _Q_D, _Q_HEADS, _Q_KV, _Q_MLP = 24, 896, 14, 2, 4864


def deepseek_ocr2_params(cfg: dict[str, Any], source: str) -> VisionParams:
    """SAM, the Qwen2 encoder, the projector and the separator of a DeepSeek-OCR-2 config."""
    tower_config(cfg, "vision_config", source)
    projector, n = projector_params(cfg, source)
    kv = _Q_D // _Q_HEADS * _Q_KV
    layer = (_Q_D * _Q_D + _Q_D + 2 * (_Q_D * kv + kv) + _Q_D * _Q_D + 2 * _Q_D
             + 3 * _Q_D * _Q_MLP)
    qwen2 = _Q_LAYERS * layer + _Q_D + (144 + 256) * _Q_D
    whole = sam_vit_b(896) + qwen2 + projector + n
    # (its rotary inv_freq and original_inv_freq: half the head dim each, float32)
    return VisionParams(whole, whole, 0, ("image",), False, kept=n,
                        buffers=2 * 4 * (_Q_D // _Q_HEADS // 2))
