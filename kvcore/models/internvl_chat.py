"""InternVL's remote-code checkpoints (`InternVLChatModel`, model_type internvl_chat:
OpenGVLab's InternVL2_5-*, InternVL3-*, InternVL3_5-*) as vLLM 0.33 builds them
(model_executor/models/internvl.py, intern_vit.py), per TP rank; and the classes built on the
same parts (`KIN`: H2OVL, NVLM-D, Skywork-R1V).

The language model is ``llm_config`` (vLLM renames it ``text_config``: `kvcore.models.text_config`
reads it there); the checkpoints' remote code picks its config class by
``llm_config.architectures[0]`` and refuses the others, so kvcli refuses them by name too.
`InternVisionModel` (InternViT: ``vision_config``, its class's defaults InternViT-6B's): the
class token, the biased patch convolution, (image / patch)^2 + 1 position rows; ``select_layer``
keeps that many layers (negative: counted from the last, -1 all of them); each layer two layer
scales (ls1, ls2), two norms (``norm_type`` layer_norm: weight and bias; rms_norm: weight), a
QKVParallelLinear qkv (biased where ``qkv_bias``), q/k RMSNorms as wide as the model where
``qk_normalization`` (whole on every rank), a RowParallelLinear proj and the MLP's biased
ColumnParallelLinear fc1 and RowParallelLinear fc2. A TP that does not divide the heads is not
refused: vLLM keeps that layer's attention whole on every rank (InternViT-6B's 25 heads at TP 2,
4 and 8; 0.33 builds no dummy heads for this class) while the MLP still splits, so its width
must divide TP. `mlp1`: a LayerNorm and two biased nn.Linear on the hidden size times
(1 / downsample_ratio)^2, whole. No buffers; ``--mm-encoder-tp-mode data`` taken.

The tower takes the model's quant_config (`VisionParams.linears`: each layer's qkv, proj, fc1
and fc2, whole where TP does not divide the heads; Skywork-R1V's mlp1 ReplicatedLinears too,
the others' mlp1 plain nn.Linear), so fp8 (`kvcore.models.fp8_vision`), AWQ / GPTQ /
compressed-tensors (`kvcore.models.tower_int_quant`) and ModelOpt (`kvcore.models.
tower_modelopt`: ``vision_model`` never, Skywork's mlp1 quantised) count it as vLLM builds it.
An AWQ checkpoint with no ``modules_to_not_convert`` whose language model's config holds its
own quantization_config (OpenGVLab's AWQ uploads) has "vision_model" added to the list
(`_patch_quant_config` of internvl.py and skyworkr1v.py: `awq_patched`).
Checked per rank against vLLM's class on the meta device (tests/data/weights_census/internvl_chat/).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvcore.errors import InputError, clipped
from kvcore.models.class_defaults import CLASS_DEFAULTS
from kvcore.models.internvl import downsample, norm_params
from kvcore.models.vision_keys import (
    VisionLinear,
    VisionParams,
    config_int,
    vision_config,
    vision_dim,
)


class Kin(NamedTuple):
    """What a class built on InternVLChatModel's parts changes: the modalities its tower is
    marked with, whether it takes ``--mm-encoder-tp-mode data``, the dummy heads its InternViT
    pads the attention with, and whether mlp1 runs through the text model's intermediate width
    without biases (NVLM-D's)."""
    modalities: tuple[str, ...] = ("image", "video")
    data_parallel: bool = True
    dummy_heads: int = 0
    wide_mlp1: bool = False
    quantised_mlp1: bool = False


# (h2ovl.py: InternVLChatModel's tower as it is; nvlm_d.py: 7 dummy heads, "to make the number
# of heads divisible by 8", and its own mlp1; skyworkr1v.py: its own class, image only, no data
# mode, mlp1's ReplicatedLinears biased as nn.Linear is)
KIN = {"InternVLChatModel": Kin(), "H2OVLChatModel": Kin(),
       "NVLM_D": Kin(dummy_heads=7, wide_mlp1=True),
       "SkyworkR1VChatModel": Kin(("image",), data_parallel=False, quantised_mlp1=True)}
CHAT_ARCHS = tuple(KIN)
# the language models the checkpoints' configuration_internvl_chat.py builds llm_config for
# (InternVL3_5's lists them all; InternVL2_5's and InternVL3's a part)
LLM_ARCHS = ("LlamaForCausalLM", "InternLM2ForCausalLM", "Phi3ForCausalLM", "Qwen2ForCausalLM",
             "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "GptOssForCausalLM")
# the remote InternVisionConfig's defaults (InternViT-6B's sizes)
VIT_DEFAULTS = {"hidden_size": 3200, "intermediate_size": 12800, "num_hidden_layers": 48,
                "num_attention_heads": 25, "image_size": 224, "patch_size": 14}
_FLAGS = {"qkv_bias": False, "qk_normalization": True}


def llm_refusal(cfg: dict[str, Any], archs: object, source: str) -> None:
    """InputError where an InternVLChatModel's ``llm_config`` is not one its remote code
    builds (none, no architecture, one it does not list); its kin's need one."""
    if not (isinstance(archs, list) and archs and archs[0] in CHAT_ARCHS):
        return
    llm = cfg.get("llm_config")
    if not isinstance(llm, dict):
        raise InputError(f"{archs[0]} needs its language model's config here, got "
                         f"{clipped(llm)}", path=source or None, field="llm_config")
    if archs[0] != "InternVLChatModel":
        return
    named = llm.get("architectures")
    arch = named[0] if isinstance(named, list) and named else None
    if arch not in LLM_ARCHS:
        raise InputError(f"{clipped(arch)}: InternVL's remote code (configuration_internvl_chat"
                         f".py) builds the language model of {', '.join(LLM_ARCHS)} only, so "
                         "vLLM cannot load the model", path=source or None,
                         field="llm_config.architectures")


def awq_patched(cfg: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
    """The text config `text` (``llm_config`` / ``text_config`` merged with the wrapper's
    quantization_config) with the quantization_config vLLM builds these classes with: an AWQ
    one with an empty ``modules_to_not_convert`` gets "vision_model" where the language model's
    own config carries a quantization_config (vLLM's comment: "the awq models from OpenGVLab
    missing `modules_to_not_convert`")."""
    archs, quant = cfg.get("architectures"), text.get("quantization_config")
    own = cfg.get("text_config") if "text_config" in cfg else cfg.get("llm_config")
    if not (isinstance(archs, list) and archs and archs[0] in CHAT_ARCHS
            and isinstance(quant, dict) and quant.get("quant_method") == "awq"
            and not quant.get("modules_to_not_convert") and isinstance(own, dict)
            and own.get("quantization_config") is not None):
        return text
    return {**text, "quantization_config": {**quant, "modules_to_not_convert": ["vision_model"]}}


def _linears(layers: int, d: int, padded: int, inter: int, heads: int,
             mlp1: tuple[int, int] | None) -> tuple[VisionLinear, ...]:
    """The linears built with the quant_config, at vLLM's paths: each layer's attention (split
    only where TP divides its `heads`) and MLP, and Skywork-R1V's `mlp1` (wide, text hidden)."""
    out: list[VisionLinear] = []
    for i in range(layers):
        at = f"vision_model.encoder.layers.{i}"
        out += [VisionLinear(f"{at}.attn.qkv", (padded,) * 3, d, "column", heads=heads),
                VisionLinear(f"{at}.attn.proj", (d,), padded, "row", heads=heads),
                VisionLinear(f"{at}.mlp.fc1", (inter,), d, "column"),
                VisionLinear(f"{at}.mlp.fc2", (d,), inter, "row")]
    if mlp1 is not None:
        wide, text = mlp1
        out += [VisionLinear("mlp1.1", (text,), wide, "replicated"),
                VisionLinear("mlp1.3", (text,), text, "replicated")]
    return tuple(out)


def _keep(cfg: dict[str, Any], layers: int, source: str) -> int:
    """The layers vLLM builds for ``select_layer`` (`_init_vision_model`)."""
    sel = cfg.get("select_layer", -1)
    if isinstance(sel, bool) or not isinstance(sel, int) or not -layers <= sel < layers:
        raise InputError(f"expected an integer from {-layers} to {layers - 1} (the vision "
                         f"tower's {layers} layers), got {clipped(sel)}", path=source or None,
                         field="select_layer")
    return layers + sel + 1 if sel < 0 else sel + 1


def internvl_chat_params(cfg: dict[str, Any], arch: str, text_hidden: int,
                         source: str) -> VisionParams:
    kin, v = KIN[arch], vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, VIT_DEFAULTS, key, source)

    d, inter, heads = dim("hidden_size"), dim("intermediate_size"), dim("num_attention_heads")
    if d % heads:
        raise InputError(f"{d} (hidden_size) is not divisible by its {heads} attention heads, "
                         "as InternViT requires", path=source or None,
                         field="vision_config.num_attention_heads")
    layers = _keep(cfg, dim("num_hidden_layers"), source)
    patch = dim("patch_size")
    embeddings = d + 3 * patch * patch * d + d + ((dim("image_size") // patch) ** 2 + 1) * d
    norm = norm_params(v, "rms_norm", d, source)
    qkv_bias, qk_norm = (bool(v.get(k, _FLAGS[k])) for k in ("qkv_bias", "qk_normalization"))
    padded = (heads + kin.dummy_heads) * (d // heads)     # (the heads with the dummy ones)
    attention = 3 * padded * (d + qkv_bias) + padded * d   # (qkv, proj's weight: split by heads)
    layer_whole = 2 * d + 2 * norm + 2 * padded * qk_norm + d + d  # (+ proj's, fc2's biases)
    mlp = d * inter + inter + inter * d
    wide = d * downsample(cfg, source) ** 2
    projector = 2 * wide + wide * text_hidden + text_hidden + text_hidden ** 2 + text_hidden
    if kin.wide_mlp1:
        key = "text_config" if "text_config" in cfg else "llm_config"
        given = cfg.get(key)
        text: dict[str, Any] = given if isinstance(given, dict) else {}
        # (absent: its config class's default, as the language model reads it; there was no
        # default here, a KeyError)
        default = CLASS_DEFAULTS.get(str(text.get("model_type", "")), {})
        middle = config_int(text, "intermediate_size", default.get("intermediate_size"),
                            f"{key}.intermediate_size", source)
        projector = 2 * wide + wide * middle + middle * text_hidden
    whole = embeddings + layers * layer_whole + projector
    mlp1 = (wide, text_hidden) if kin.quantised_mlp1 else None
    return VisionParams(whole + layers * (attention + mlp), whole, 0, kin.modalities,
                        data_parallel=kin.data_parallel, mlp_width=inter if layers else 0,
                        head_bound=(heads + kin.dummy_heads, layers * attention),
                        linears=_linears(layers, d, padded, inter, heads + kin.dummy_heads,
                                         mlp1))
