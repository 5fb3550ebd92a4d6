"""DeepSeek-VL2 (`DeepseekVLV2ForCausalLM`, deepseek_vl2.py) as vLLM 0.33 builds it.

* The text model: vLLM's `DeepseekVLV2Config` builds its text config from ``language_config``
  as a `DeepseekV2Config` (`DeepseekVLV2TextConfig`), whatever that object's model_type says:
  kvcli reads it as ``deepseek_v2`` (MLA where it has a ``kv_lora_rank``), or as ``deepseek``
  where its ``qk_nope_head_dim`` and ``qk_rope_head_dim`` are 0 (deepseek_v2.py's `use_mha`:
  DeepSeek-MoE's plain attention, ``hidden_size / num_attention_heads`` a head).
* The tower: timm's ``vit_so400m_patch14_siglip_384.webli`` whatever ``vision_config`` says
  (vLLM names the model outright): a 14 x 14 patch embedding to 1,152, 27 x 27 position
  embeddings, 27 ViT layers with a 4,304-wide MLP, a final LayerNorm and the attention-pooling
  head (`attn_pool`: a latent, q, kv, proj, a LayerNorm, an MLP), though its output is unused.
  Above TP 1 vLLM swaps each timm `Mlp`'s fc1 for a ColumnParallelLinear and fc2 for a
  RowParallelLinear (`patch_vit_for_tp`): those split, the attention whole. Those 56 take the
  quant_config, by the module's own names (``blocks.N.mlp.fc1``, ``attn_pool.mlp.fc2``: no
  ``vision.``, so a list naming ``vision`` leaves them quantised), and then the whole tower is
  cast to the model dtype (`kvcore.models.tower_cast`: an fp8 weight and its scales end in
  bfloat16, packed int32 stays); at TP 1 they are timm's nn.Linear. Then the projector
  (``downsample_mlp_gelu``: ``depth`` biased `nn.Linear`, the first over
  ``downsample_ratio``^2 patches, or one ``linear``) and ``image_newline`` and
  ``view_seperator`` (``n_embed`` each): whole, all in the model dtype, dropped with the tower
  (modality image) but the two separators, plain Parameters that `_mark_tower_model` does not
  drop (as LLaVA-NeXT's ``image_newline``). The class does not take ``--mm-encoder-tp-mode
  data``.
Checked per rank against vLLM's class on the meta device (tests/data/weights_census/mm_omni/
deepseek_vl2/; quantised: tests/data/weights_census/quant_dsvl2/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.unlimited_ocr import UNLIMITED_OCR, with_window
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    tower_config,
    vision_dim,
    vit_layer,
)

ARCH = "DeepseekVLV2ForCausalLM"
# the classes whose config is vLLM's DeepseekVLV2Config (DeepSeek-OCR's: deepseek_ocr.py,
# deepseek_ocr2.py; Unlimited-OCR's subclass of it), the text model its language_config
LANGUAGE_CONFIG_ARCHS = (ARCH, "DeepseekOCRForCausalLM", "DeepseekOCR2ForCausalLM", UNLIMITED_OCR)
# timm's vit_so400m_patch14_siglip_384: width, layers, MLP width, patch, image side
_D, _LAYERS, _MLP, _PATCH, _IMAGE = 1152, 27, 4304, 14, 384
# vLLM's MlpProjectorConfig defaults
PROJECTOR_DEFAULTS = {"input_dim": 1152, "n_embed": 2048, "depth": 2, "mlp_ratio": 1,
                      "downsample_ratio": 2}


def language_as_text(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """A DeepSeek-VL2 config with its ``language_config`` as the ``deepseek_v2`` text config
    vLLM builds from it; any other config unchanged."""
    archs = cfg.get("architectures")
    if not (isinstance(archs, list) and archs and archs[0] in LANGUAGE_CONFIG_ARCHS):
        return cfg
    lang = cfg.get("language_config", {})
    if not isinstance(lang, dict):
        # (vLLM's DeepseekVLV2Config builds its text config from its keys, null too; kvcli
        # read anything else as an empty one and refused it as "missing 'num_hidden_layers'")
        raise InputError(f"must be an object, got {clipped(lang)}: vLLM builds the language "
                         "model from it", path=source or None, field="language_config")
    # (deepseek_v2.py's use_mha: no query-key head dims, DeepSeek-MoE's plain attention, as
    # the model type deepseek; DeepSeek-VL2-Tiny's)
    mha = all(lang.get(k) == 0 for k in ("qk_nope_head_dim", "qk_rope_head_dim"))
    text = {**lang, "model_type": "deepseek" if mha else "deepseek_v2"}
    # (Unlimited-OCR's rswa_window, which vLLM copies onto the text config)
    return {**cfg, "text_config": with_window(cfg, text, source)}


def deepseek_vl2_params(cfg: dict[str, Any], source: str) -> VisionParams:
    """The SigLIP tower, the projector and the two separator embeddings."""
    # (its sizes are timm's whatever vision_config says, but vLLM's config class builds a
    # VisionEncoderConfig of its keys: a list there fails to load, where kvcli sized it)
    tower_config(cfg, "vision_config", source)
    projector, n = projector_params(cfg, source)
    layer_whole, layer_split = vit_layer(_D, _MLP)
    mlp = _D * _MLP + _MLP + _MLP * _D          # (a timm Mlp's split part: fc2's bias whole)
    grid = _IMAGE // _PATCH
    # patch embedding, positions, the layers' attention and norms, the final norm, the
    # pooling head's latent, q, kv, proj, norm and fc2 bias
    tower_whole = (3 * _PATCH * _PATCH * _D + _D + grid * grid * _D
                   + _LAYERS * (layer_whole + layer_split - mlp) + 2 * _D
                   + _D + 4 * (_D * _D + _D) + 2 * _D + _D)
    whole = tower_whole + projector + 2 * n
    total = whole + (_LAYERS + 1) * mlp
    # (the two separators, plain Parameters, stay when vLLM drops the tower: `kept`)
    return VisionParams(total, whole, 0, ("image",), False, linears=_swapped(), mlp_width=_MLP,
                        kept=2 * n)


def projector_params(cfg: dict[str, Any], source: str) -> tuple[int, int]:
    """(parameters, ``n_embed``) of the config's `MlpProjector` (deepseek_vl2.py; DeepSeek-OCR's
    too), whole on every rank."""
    pc = tower_config(cfg, "projector_config", source)

    def dim(key: str) -> int:
        return vision_dim(pc, PROJECTOR_DEFAULTS, key, source, key_of="projector_config")

    kind = pc.get("projector_type", "downsample_mlp_gelu")
    n, inp = dim("n_embed"), dim("input_dim")
    if kind == "downsample_mlp_gelu":
        width, r = n * dim("mlp_ratio"), dim("downsample_ratio")
        # (two linears at least: a depth below 2 builds the first and the last)
        projector = (inp * r * r * width + width + max(dim("depth") - 2, 0) * (
            width * width + width) + width * n + n)
    elif kind == "linear":
        projector = inp * n + n
    else:       # (vLLM's MlpProjector raises NotImplementedError)
        raise InputError(f"unsupported projector type {kind!r} (vLLM's DeepSeek-VL2 builds "
                         "downsample_mlp_gelu or linear)", path=source or None,
                         field="projector_config.projector_type")
    return projector, n


def _swapped() -> tuple[VisionLinear, ...]:
    """The timm MLPs' fc1 and fc2 vLLM swaps for parallel linears above TP 1 (by the names
    the quant_config sees them by), cast to the model dtype with the tower."""
    out: list[VisionLinear] = []
    for at in (*(f"blocks.{i}" for i in range(_LAYERS)), "attn_pool"):
        out += [VisionLinear(f"{at}.mlp.fc1", (_MLP,), _D, "column", cast=True, least_tp=2),
                VisionLinear(f"{at}.mlp.fc2", (_D,), _MLP, "row", cast=True, least_tp=2)]
    return tuple(out)
