"""Which vision tower (and projector) vLLM 0.33 builds beside a multimodal class's language
model, by architecture: Qwen3.5's and Qwen3-VL's (`kvcore.models.qwen3_5`), Qwen2-VL's and
Qwen2.5-VL's (`kvcore.models.qwen_vl`), Gemma 3's SigLIP (`kvcore.models.siglip`), Gemma 3n's and
Gemma 4's vision and audio towers (`kvcore.models.gemma4_towers`), LFM2-VL's SigLIP2
(`kvcore.models.lfm2_vl_tower`), Llama 4's (`kvcore.models.llama4_vision`), the LLaVA family's
and Mistral 3's (`kvcore.models.llava`), PaliGemma's (`kvcore.models.paligemma`), InternVL's
(`kvcore.models.internvl`; its remote-code checkpoints': `kvcore.models.internvl_chat`),
GLM-4.1V's and GLM-4.5V's (`kvcore.models.glm4v_tower`), Kimi-VL's and Kimi-K2.5's
(`kvcore.models.moonvit`), MiniCPM-V's (`kvcore.models.minicpmv`), MiniCPM-o's
(`kvcore.models.minicpmo`), Idefics3's and SmolVLM's
(`kvcore.models.idefics3`), Phi-3-vision's (`kvcore.models.phi3v`), Phi-4-multimodal's
(`kvcore.models.phi4mm`), Qwen2-Audio's and the omni thinkers' audio and vision towers
(`kvcore.models.qwen_omni`), DeepSeek-VL2's (`kvcore.models.deepseek_vl2`), ERNIE-4.5-VL's
(`kvcore.models.ernie45_vl_tower`), Keye-VL's (`kvcore.models.keye_tower`), Nemotron Nano VL
V2's RADIO (`kvcore.models.radio`), Molmo's (`kvcore.models.molmo`), GLM-4V's
(`kvcore.models.glm4v_eva`), Step3-VL's (`kvcore.models.step3_vl_tower`); none for the other
classes kvcli reads (`kvcore.models.multimodal_classes` warns of those)."""

from __future__ import annotations

from typing import Any

from kvcore.models.deepseek_vl2 import deepseek_vl2_params
from kvcore.models.ernie45_vl_tower import ernie_vl_params
from kvcore.models.gemma4_towers import multimodal_towers
from kvcore.models.glm4v_eva import glm4v_eva_params
from kvcore.models.glm4v_tower import GLM4V_ARCHS, glm4v_vision_params
from kvcore.models.idefics3 import IDEFICS3_ARCHS, idefics3_vision_params
from kvcore.models.interns1_pro import ARCH as INTERNS1_PRO
from kvcore.models.internvl import internvl_vision_params
from kvcore.models.internvl_chat import CHAT_ARCHS, internvl_chat_params
from kvcore.models.keye_tower import KEYE_ARCHS, keye_params
from kvcore.models.lfm2_vl_tower import lfm2_vl_params
from kvcore.models.llama4_vision import llama4_vision_params
from kvcore.models.llava import WRAPPERS, llava_vision_params
from kvcore.models.minicpmo import minicpmo_params
from kvcore.models.minicpmv import minicpmv_params
from kvcore.models.molmo import molmo_tower
from kvcore.models.moonvit import k25_vision_params, kimi_vl_vision_params
from kvcore.models.paligemma import paligemma_vision_params
from kvcore.models.phi3v import phi3v_params
from kvcore.models.phi4mm import phi4mm_params
from kvcore.models.qwen3_5 import QWEN3_5_TYPES, vision_tower_params
from kvcore.models.qwen_omni import AUDIO_ARCHS, audio_towers
from kvcore.models.qwen_vl import qwen_vl_params
from kvcore.models.radio import radio_params
from kvcore.models.siglip import gemma3_vision_params
from kvcore.models.step3_vl_tower import step3_vl_params
from kvcore.models.vision_keys import VisionParams
from kvcore.models.voxtral import voxtral_params
from kvcore.specs import DTYPE_BYTES

QWEN3_VL = ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration")
QWEN2_VL = ("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration")


def vision_tower(cfg: dict[str, Any], model_type: str, archs: Any, hidden: int,
                 source: str, dtype: str = "bfloat16") -> VisionParams:
    """The vision tower (and projector) vLLM builds for the multimodal classes, by architecture:
    those named above; none for the rest."""
    arch = str(archs[0] if isinstance(archs, list) and archs else "")
    if model_type in QWEN3_5_TYPES and arch.endswith("ForConditionalGeneration"):
        return vision_tower_params(cfg, source)
    if arch in QWEN3_VL:
        return vision_tower_params(cfg, source, qwen3_vl=True)     # (Qwen3_VisionTransformer)
    if arch == INTERNS1_PRO:     # (Qwen3-VL's tower; no deepstack unless listed)
        return vision_tower_params(cfg, source)
    if arch in QWEN2_VL:
        return qwen_vl_params(cfg, arch, source)
    if arch == "Gemma3ForConditionalGeneration":
        return gemma3_vision_params(cfg, hidden, source)
    if arch == "Llama4ForConditionalGeneration":
        return llama4_vision_params(cfg, hidden, source)
    if arch in WRAPPERS:
        return llava_vision_params(cfg, arch, hidden, source)
    if arch == "PaliGemmaForConditionalGeneration":
        return paligemma_vision_params(cfg, source)
    if arch in ("InternVLForConditionalGeneration", "InternS1ForConditionalGeneration"):
        return internvl_vision_params(cfg, hidden, source)
    if arch in CHAT_ARCHS:
        return internvl_chat_params(cfg, arch, hidden, source)
    if arch == "Lfm2VlForConditionalGeneration":
        return lfm2_vl_params(cfg, hidden, source)
    if arch in GLM4V_ARCHS:
        return glm4v_vision_params(cfg, source, DTYPE_BYTES[dtype])
    if arch == "KimiVLForConditionalGeneration":
        return kimi_vl_vision_params(cfg, hidden, source)
    if arch == "KimiK25ForConditionalGeneration":
        return k25_vision_params(cfg, hidden, source, DTYPE_BYTES[dtype])
    if arch == "MiniCPMV":
        return minicpmv_params(cfg, hidden, source, DTYPE_BYTES[dtype])
    if arch == "MiniCPMO":
        return minicpmo_params(cfg, hidden, source, DTYPE_BYTES[dtype])
    if arch in IDEFICS3_ARCHS:
        return idefics3_vision_params(cfg, hidden, source)
    if arch == "Phi3VForCausalLM":
        return phi3v_params(cfg, hidden, source)
    if arch == "Phi4MMForCausalLM":
        return phi4mm_params(cfg, hidden, source, DTYPE_BYTES[dtype])
    if arch == "DeepseekVLV2ForCausalLM":
        return deepseek_vl2_params(cfg, source)
    if arch == "Ernie4_5_VLMoeForConditionalGeneration" and model_type == "ernie4_5_moe_vl":
        return ernie_vl_params(cfg, hidden, source)
    if arch in KEYE_ARCHS:
        return keye_params(cfg, arch, hidden, source)
    if arch == "MolmoForCausalLM":
        return molmo_tower(cfg, hidden)
    if arch == "NemotronH_Nano_VL_V2":
        return radio_params(cfg, hidden, source)
    if arch == "VoxtralForConditionalGeneration":   # (an HF config.json: refused, as vLLM)
        return voxtral_params(cfg, source)
    if model_type == "chatglm":     # (GLM-4V's EVA2-CLIP; a vision config's text class refused)
        return glm4v_eva_params(cfg, arch, hidden, source)
    if arch == "Step3VLForConditionalGeneration":
        return step3_vl_params(cfg, hidden, source)
    if arch in AUDIO_ARCHS:
        return audio_towers(cfg, arch, hidden, source, dtype)
    if (towers := multimodal_towers(cfg, arch, hidden, dtype, source)) is not None:
        return towers
    return VisionParams(0, 0)
