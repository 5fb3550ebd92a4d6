"""Which vision or audio tower (and projector) vLLM 0.33 builds beside a multimodal class's
language model: `BY_ARCH` maps each architecture whose tower kvcli counts to its module's
reader (one module a tower family: `kvcore.models.qwen_vl`, `kvcore.models.llava`,
`kvcore.models.whisper_audio`, ...); Qwen3.5's, ERNIE-4.5-VL's, GLM-4V's and Gemma 3n's / 4's
are chosen by the text model's type as well (`vision_tower`). docs/config.md's `multimodal` row
names them all; vLLM's other multimodal classes get none (`kvcore.models.multimodal_classes`
warns of those)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.models.aria_tower import aria_vision_params
from kvcore.models.audioflamingo3 import ARCH as AUDIO_FLAMINGO3
from kvcore.models.audioflamingo3 import audioflamingo3_params
from kvcore.models.blip2 import blip2_vision_params
from kvcore.models.cohere2_vision import cohere2_vision_params
from kvcore.models.cosmos3_edge_tower import ARCH as COSMOS3_EDGE
from kvcore.models.cosmos3_edge_tower import cosmos3_edge_params
from kvcore.models.deepseek_ocr_tower import deepseek_ocr2_params, deepseek_ocr_params
from kvcore.models.deepseek_vl2 import deepseek_vl2_params
from kvcore.models.dots_ocr_tower import dots_ocr_params
from kvcore.models.eagle2_5 import eagle2_5_params
from kvcore.models.ernie45_vl_tower import ernie_vl_params
from kvcore.models.exaone4_5_tower import ARCH as EXAONE4_5
from kvcore.models.exaone4_5_tower import exaone4_5_params
from kvcore.models.gemma4_towers import multimodal_towers
from kvcore.models.glm4v_eva import glm4v_eva_params
from kvcore.models.glm4v_tower import GLM4V_ARCHS, glm4v_vision_params
from kvcore.models.glm_ocr_tower import glm_ocr_params
from kvcore.models.glmasr import ARCH as GLM_ASR
from kvcore.models.glmasr import glmasr_params
from kvcore.models.granite4_vision import granite4_vision_params
from kvcore.models.granite_speech import ARCHS as GRANITE_SPEECH
from kvcore.models.granite_speech import granite_speech_params
from kvcore.models.idefics3 import IDEFICS3_ARCHS, idefics3_vision_params
from kvcore.models.interns1_pro import ARCH as INTERNS1_PRO
from kvcore.models.internvl import internvl_vision_params
from kvcore.models.internvl_chat import CHAT_ARCHS, internvl_chat_params
from kvcore.models.isaac import ARCH as ISAAC
from kvcore.models.isaac import isaac_params
from kvcore.models.kanana_v import kanana_v_params
from kvcore.models.keye_tower import KEYE_ARCHS, keye_params
from kvcore.models.lfm2_vl_tower import lfm2_vl_params
from kvcore.models.llama4_vision import llama4_vision_params
from kvcore.models.llava import WRAPPERS, llava_vision_params
from kvcore.models.llava_onevision2 import ARCH as LLAVA_OV2
from kvcore.models.llava_onevision2 import llava_onevision2_params
from kvcore.models.midashenglm import ARCH as MIDASHENGLM
from kvcore.models.midashenglm import midashenglm_params
from kvcore.models.minicpmo import minicpmo_params
from kvcore.models.minicpmv import minicpmv_params
from kvcore.models.minicpmv4_6 import ARCHS as MINICPMV4_6
from kvcore.models.minicpmv4_6 import minicpmv4_6_params
from kvcore.models.molmo import molmo_tower
from kvcore.models.molmo2 import MOLMO2, molmo2_tower
from kvcore.models.moonvit import k25_vision_params, kimi_vl_vision_params
from kvcore.models.moss_transcribe import ARCH as MOSS
from kvcore.models.moss_transcribe import moss_params
from kvcore.models.muse_glimmer import ARCH as MUSE_GLIMMER
from kvcore.models.muse_glimmer import muse_glimmer_params
from kvcore.models.opencua import opencua_params
from kvcore.models.ovis_navit import OVIS2_5_ARCHS, ovis2_5_params
from kvcore.models.ovis_tokenizer import ovis_params
from kvcore.models.paddleocr_vl_tower import paddleocr_vl_params
from kvcore.models.paligemma import paligemma_vision_params
from kvcore.models.phi3v import phi3v_params
from kvcore.models.phi4_siglip import ARCH as PHI4_SIGLIP
from kvcore.models.phi4_siglip import phi4_siglip_params
from kvcore.models.phi4mm import phi4mm_params
from kvcore.models.pixtral_mistral import ARCH as PIXTRAL
from kvcore.models.pixtral_mistral import pixtral_params
from kvcore.models.qianfan_ocr import ARCH as QIANFAN_OCR
from kvcore.models.qianfan_ocr import qianfan_ocr_params
from kvcore.models.qwen3_5 import QWEN3_5_TYPES, vision_tower_params
from kvcore.models.qwen3_asr import qwen3_asr_params
from kvcore.models.qwen_omni import AUDIO_ARCHS, audio_towers
from kvcore.models.qwen_vl import qwen_vl_params
from kvcore.models.radio import NEMOTRON_VL_ARCHS, radio_params
from kvcore.models.siglip import gemma3_vision_params
from kvcore.models.step3_vl_tower import step3_vl_params
from kvcore.models.ultravox import ultravox_params
from kvcore.models.vision_keys import VisionParams
from kvcore.models.voxtral import voxtral_params
from kvcore.specs import DTYPE_BYTES

QWEN3_VL = ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration",
            "Alpamayo2Super")     # (Alpamayo 2 Super: Qwen3-VL's class, its text output)
# (the Omni names: vLLM builds NemotronH_Nano_VL_V2 for them, its sound encoder with them)
NEMOTRON_VL = NEMOTRON_VL_ARCHS
QWEN2_VL = ("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration")

# (a class's tower from the config, its architecture, the text model's width, the config's
# path and the model dtype)
Tower = Callable[[dict[str, Any], str, int, str, str], VisionParams]


def _each(archs: Any, tower: Tower) -> dict[str, Tower]:
    return dict.fromkeys(archs, tower)


# the classes whose tower the architecture alone decides
BY_ARCH: dict[str, Tower] = {
    **_each(QWEN3_VL, lambda c, a, h, s, d: vision_tower_params(c, s, qwen3_vl=True)),
    # (Intern-S1-Pro's: Qwen3-VL's tower, no deepstack unless listed)
    INTERNS1_PRO: lambda c, a, h, s, d: vision_tower_params(c, s),
    **_each(QWEN2_VL, lambda c, a, h, s, d: qwen_vl_params(c, a, s)),
    "Gemma3ForConditionalGeneration": lambda c, a, h, s, d: gemma3_vision_params(c, h, s),
    "Llama4ForConditionalGeneration": lambda c, a, h, s, d: llama4_vision_params(c, h, s),
    **_each(WRAPPERS, lambda c, a, h, s, d: llava_vision_params(c, a, h, s)),
    "PaliGemmaForConditionalGeneration": lambda c, a, h, s, d: paligemma_vision_params(c, s),
    **_each(("InternVLForConditionalGeneration", "InternS1ForConditionalGeneration"),
            lambda c, a, h, s, d: internvl_vision_params(c, h, s)),
    **_each(CHAT_ARCHS, lambda c, a, h, s, d: internvl_chat_params(c, a, h, s)),
    "Lfm2VlForConditionalGeneration": lambda c, a, h, s, d: lfm2_vl_params(c, h, s),
    **_each(GLM4V_ARCHS, lambda c, a, h, s, d: glm4v_vision_params(c, s, DTYPE_BYTES[d])),
    "KimiVLForConditionalGeneration": lambda c, a, h, s, d: kimi_vl_vision_params(c, h, s),
    "KimiK25ForConditionalGeneration":
        lambda c, a, h, s, d: k25_vision_params(c, h, s, DTYPE_BYTES[d]),
    "MiniCPMV": lambda c, a, h, s, d: minicpmv_params(c, h, s, DTYPE_BYTES[d]),
    "MiniCPMO": lambda c, a, h, s, d: minicpmo_params(c, h, s, DTYPE_BYTES[d]),
    **_each(IDEFICS3_ARCHS, lambda c, a, h, s, d: idefics3_vision_params(c, h, s)),
    "Phi3VForCausalLM": lambda c, a, h, s, d: phi3v_params(c, h, s),
    "Phi4MMForCausalLM": lambda c, a, h, s, d: phi4mm_params(c, h, s, DTYPE_BYTES[d]),
    "DeepseekVLV2ForCausalLM": lambda c, a, h, s, d: deepseek_vl2_params(c, s),
    **_each(KEYE_ARCHS, lambda c, a, h, s, d: keye_params(c, a, h, s)),
    "MolmoForCausalLM": lambda c, a, h, s, d: molmo_tower(c, h),
    MOLMO2: lambda c, a, h, s, d: molmo2_tower(c, s),
    **_each(NEMOTRON_VL, lambda c, a, h, s, d: radio_params(c, h, s, DTYPE_BYTES[d])),
    # (an HF config.json without downsample_factor: refused, as vLLM refuses it)
    "VoxtralForConditionalGeneration": lambda c, a, h, s, d: voxtral_params(c, h, s),
    MOSS: lambda c, a, h, s, d: moss_params(c, h, s),
    COSMOS3_EDGE: lambda c, a, h, s, d: cosmos3_edge_params(c, h, s),
    MUSE_GLIMMER: lambda c, a, h, s, d: muse_glimmer_params(c, h, s),
    "Step3VLForConditionalGeneration": lambda c, a, h, s, d: step3_vl_params(c, h, s),
    **_each(AUDIO_ARCHS, lambda c, a, h, s, d: audio_towers(c, a, h, s, d)),
    "Cohere2VisionForConditionalGeneration":
        lambda c, a, h, s, d: cohere2_vision_params(c, h, s),
    "AriaForConditionalGeneration": lambda c, a, h, s, d: aria_vision_params(c, h, s),
    "Blip2ForConditionalGeneration": lambda c, a, h, s, d: blip2_vision_params(c, h, s),
    "Granite4VisionForConditionalGeneration":
        lambda c, a, h, s, d: granite4_vision_params(c, h, s),
    "DotsOCRForCausalLM": lambda c, a, h, s, d: dots_ocr_params(c, s),
    "PaddleOCRVLForConditionalGeneration": lambda c, a, h, s, d: paddleocr_vl_params(c, h, s),
    "DeepseekOCRForCausalLM": lambda c, a, h, s, d: deepseek_ocr_params(c, s),
    "DeepseekOCR2ForCausalLM": lambda c, a, h, s, d: deepseek_ocr2_params(c, s),
    # (DeepSeek-OCR's class whole: `kvcore.models.unlimited_ocr`)
    "UnlimitedOCRForCausalLM": lambda c, a, h, s, d: deepseek_ocr_params(c, s),
    "GlmOcrForConditionalGeneration":
        lambda c, a, h, s, d: glm_ocr_params(c, s, DTYPE_BYTES[d]),
    **_each(OVIS2_5_ARCHS, lambda c, a, h, s, d: ovis2_5_params(c, s)),
    "Ovis": lambda c, a, h, s, d: ovis_params(c, s),
    "Eagle2_5_VLForConditionalGeneration": lambda c, a, h, s, d: eagle2_5_params(c, h, s),
    "OpenCUAForConditionalGeneration":
        lambda c, a, h, s, d: opencua_params(c, s, DTYPE_BYTES[d]),
    "KananaVForConditionalGeneration":
        lambda c, a, h, s, d: kanana_v_params(c, s, DTYPE_BYTES[d]),
    "UltravoxModel": lambda c, a, h, s, d: ultravox_params(c, h, s),
    "Qwen3ASRForConditionalGeneration": lambda c, a, h, s, d: qwen3_asr_params(c, h, s),
    "Qwen3ASRRealtimeGeneration": lambda c, a, h, s, d: qwen3_asr_params(c, h, s),
    AUDIO_FLAMINGO3: lambda c, a, h, s, d: audioflamingo3_params(c, h, s),
    GLM_ASR: lambda c, a, h, s, d: glmasr_params(c, h, s),
    **_each(GRANITE_SPEECH,
            lambda c, a, h, s, d: granite_speech_params(c, h, s, DTYPE_BYTES[d])),
    MIDASHENGLM: lambda c, a, h, s, d: midashenglm_params(c, h, s, DTYPE_BYTES[d]),
    LLAVA_OV2: lambda c, a, h, s, d: llava_onevision2_params(c, h, s),
    ISAAC: lambda c, a, h, s, d: isaac_params(c, h, s),
    EXAONE4_5: lambda c, a, h, s, d: exaone4_5_params(c, s, DTYPE_BYTES[d]),
    QIANFAN_OCR: lambda c, a, h, s, d: qianfan_ocr_params(c, h, s),
    PIXTRAL: lambda c, a, h, s, d: pixtral_params(c, h, s),
    PHI4_SIGLIP: lambda c, a, h, s, d: phi4_siglip_params(c, h, s),
    **_each(MINICPMV4_6, lambda c, a, h, s, d: minicpmv4_6_params(c, a, h, s)),
}


def vision_tower(cfg: dict[str, Any], model_type: str, archs: Any, hidden: int,
                 source: str, dtype: str = "bfloat16") -> VisionParams:
    """The vision tower (and projector) vLLM builds for the multimodal classes, by architecture
    (`BY_ARCH`) and, where the text model's type decides, by that; none for
    the rest."""
    arch = str(archs[0] if isinstance(archs, list) and archs else "")
    # (MiniCPM-V 4.6's and 4.7's Qwen3.5 text model: their own tower, BY_ARCH's)
    if (model_type in QWEN3_5_TYPES and arch.endswith("ForConditionalGeneration")
            and arch not in BY_ARCH):
        return vision_tower_params(cfg, source)
    if (tower := BY_ARCH.get(arch)) is not None:
        return tower(cfg, arch, hidden, source, dtype)
    if arch == "Ernie4_5_VLMoeForConditionalGeneration" and model_type == "ernie4_5_moe_vl":
        return ernie_vl_params(cfg, hidden, source)
    if model_type == "chatglm":     # (GLM-4V's EVA2-CLIP; a vision config's text class refused)
        return glm4v_eva_params(cfg, arch, hidden, source)
    if (towers := multimodal_towers(cfg, arch, hidden, dtype, source)) is not None:
        return towers
    return VisionParams(0, 0)
