# ruff: noqa
"""InternVL's remote-code config classes (`InternVLChatConfig`, model_type internvl_chat, and
`InternVisionConfig`, intern_vit_6b) written for the recorders here, after the
configuration_internvl_chat.py / configuration_intern_vit.py that OpenGVLab's checkpoints ship
(InternVL2_5-*, InternVL3-*, InternVL3_5-*): transformers 5.20.2 and vLLM 0.33 have no class
for the model_type, and the recorders cannot run a checkpoint's remote code offline.

What vLLM reads off them: the checkpoint's fields as given; the vision config's defaults where a
field is left out (InternVisionConfig's: InternViT-6B's sizes); the language model's config
class chosen by ``llm_config.architectures[0]`` as the remote code chooses it (an architecture
it does not list is refused: "Unsupported architecture"). InternLM2's class (remote code too)
is a LlamaConfig carrying model_type internlm2 and its ``bias`` flag, the keys vLLM's
internlm2.py reads. `register()` makes AutoConfig load model_type internvl_chat with it, as
`trust_remote_code` would with the checkpoint's own file.
"""
from transformers import AutoConfig, PretrainedConfig
from transformers.models.gpt_oss import GptOssConfig
from transformers.models.llama import LlamaConfig
from transformers.models.phi3 import Phi3Config
from transformers.models.qwen2 import Qwen2Config
from transformers.models.qwen3 import Qwen3Config
from transformers.models.qwen3_moe import Qwen3MoeConfig

VISION_DEFAULTS = dict(
    num_channels=3, patch_size=14, image_size=224, qkv_bias=False, hidden_size=3200,
    num_attention_heads=25, intermediate_size=12800, qk_normalization=True,
    num_hidden_layers=48, use_flash_attn=True, hidden_act="gelu", norm_type="rms_norm",
    layer_norm_eps=1e-6, dropout=0.0, drop_path_rate=0.0, attention_dropout=0.0,
    initializer_range=0.02, initializer_factor=0.1)


class InternVisionConfig(PretrainedConfig):
    model_type = "intern_vit_6b"

    def __init__(self, **kwargs):
        fields = {k: kwargs.pop(k, v) for k, v in VISION_DEFAULTS.items()}
        super().__init__(**kwargs)
        for k, v in fields.items():
            setattr(self, k, v)


class InternLM2Config(LlamaConfig):
    model_type = "internlm2"

    def __init__(self, bias=True, **kwargs):
        super().__init__(**kwargs)
        self.bias = bias


LLM_CLASSES = {
    "LlamaForCausalLM": LlamaConfig, "InternLM2ForCausalLM": InternLM2Config,
    "Phi3ForCausalLM": Phi3Config, "Qwen2ForCausalLM": Qwen2Config,
    "Qwen3ForCausalLM": Qwen3Config, "Qwen3MoeForCausalLM": Qwen3MoeConfig,
    "GptOssForCausalLM": GptOssConfig,
}
CHAT_DEFAULTS = dict(
    use_backbone_lora=0, use_llm_lora=0, select_layer=-1, force_image_size=None,
    downsample_ratio=0.5, template=None, dynamic_image_size=False, use_thumbnail=False,
    ps_version="v1", min_dynamic_patch=1, max_dynamic_patch=6)


class InternVLChatConfig(PretrainedConfig):
    model_type = "internvl_chat"

    def __init__(self, vision_config=None, llm_config=None, **kwargs):
        fields = {k: kwargs.pop(k, v) for k, v in CHAT_DEFAULTS.items()}
        super().__init__(**kwargs)
        vision_config = dict(vision_config or {"architectures": ["InternVisionModel"]})
        llm_config = dict(llm_config or {"architectures": ["Qwen2ForCausalLM"]})
        self.vision_config = InternVisionConfig(**vision_config)
        arch = llm_config.get("architectures")[0]
        classes = getattr(self, "LLM", LLM_CLASSES)
        if arch not in classes:
            raise ValueError(f"Unsupported architecture: {arch}")
        llm_config.pop("model_type", None)
        self.llm_config = classes[arch](**llm_config)
        for k, v in fields.items():
            setattr(self, k, v)

    def to_dict(self):
        out = super().to_dict()
        out["vision_config"] = self.vision_config.to_dict()
        out["llm_config"] = self.llm_config.to_dict()
        out.pop("text_config", None)
        return out


SUBSTITUTIONS = [
    "model_type internvl_chat: internvl_chat_config.py's InternVLChatConfig registered with "
    "AutoConfig (the checkpoints' remote-code config class, rewritten); h2ovl_chat, NVLM_D "
    "and skywork_chat: its kin_config classes; interns1: transformers' InternVLConfig renamed "
    "(InternS1's remote class holds the same keys)",
    "InternVLProcessingInfo.ctx_video_token: the video token its text model_type maps to, "
    "taken as in the tokenizer (none loaded here)"]
_VIDEO = {"qwen2": "<|video_pad|>", "qwen3": "<|video_pad|>", "qwen3_moe": "<|video_pad|>",
          "gpt_oss": "<|reserved_200000|>"}


from transformers.models.internvl import InternVLConfig
from transformers.models.mistral import MistralConfig


def kin_config(model_type):
    """H2OVL's, NVLM-D's and Skywork-R1V's remote config classes: InternVLChatConfig's fields
    and nesting (their files are InternVL's, renamed); their llm_config lists are not
    known here, so MistralForCausalLM (H2OVL-Mississippi-2B's Danube2) is taken too. (Each
    class names its own __init__: transformers replaces an inherited one.)"""
    return type(f"{model_type}Config", (InternVLChatConfig,), {
        "model_type": model_type, "__init__": InternVLChatConfig.__init__,
        "LLM": {**LLM_CLASSES, "MistralForCausalLM": MistralConfig}})


KIN_TYPES = ("h2ovl_chat", "NVLM_D", "skywork_chat")


def register():
    """The config class for model_type internvl_chat, and the video token's lookup: the
    processing info asks the tokenizer whether it has the token its text model_type maps to
    (internvl.py `ctx_video_token`) when ModelConfig checks whether the model takes multimodal
    inputs at all, and no tokenizer is loaded here. Qwen's and gpt-oss' tokenizers have them,
    so the map's token is taken as present. It decides whether "video" is a supported limit,
    not what the model builds (the tower is marked image and video either way)."""
    from vllm.model_executor.models import internvl
    AutoConfig.register("internvl_chat", InternVLChatConfig, exist_ok=True)
    AutoConfig.register("internlm2", InternLM2Config, exist_ok=True)   # InternLM2 alone
    for model_type in KIN_TYPES:
        AutoConfig.register(model_type, kin_config(model_type), exist_ok=True)
    AutoConfig.register("interns1", type("InternS1Config", (InternVLConfig,), {
        "model_type": "interns1", "__init__": InternVLConfig.__init__}), exist_ok=True)
    internvl.InternVLProcessingInfo.ctx_video_token = property(
        lambda self: _VIDEO.get(self.get_hf_config().get_text_config().model_type))
