# ruff: noqa
"""MiniCPM-o's remote-code config class, rewritten (transformers 5.20.2 and vLLM have none;
README.md): a plain PreTrainedConfig subclass keeping every key of config.json as an
attribute, ``vision_config`` a SiglipVisionConfig (absent: the remote default, so400m at
980 px) and ``audio_config`` a WhisperConfig, as configuration_minicpmo.py makes them
(``tts_config`` kept as a dict: vLLM builds no TTS). `register()` registers it with AutoConfig
for model_type minicpmo, so vLLM loads these configs as it would the remote class."""
from transformers import AutoConfig, PreTrainedConfig, SiglipVisionConfig, WhisperConfig

MINICPMV_VISION = {"hidden_size": 1152, "image_size": 980, "intermediate_size": 4304,
                   "model_type": "siglip", "num_attention_heads": 16,
                   "num_hidden_layers": 27, "patch_size": 14}
SUBSTITUTIONS = [
    "remote-code config class MiniCPMOConfig registered with AutoConfig: every config.json "
    "key an attribute; vision_config a SiglipVisionConfig, audio_config a WhisperConfig (see "
    "weights_census/mm_audio/minicpmo_config.py)"]


class MiniCPMOConfig(PreTrainedConfig):
    model_type = "minicpmo"

    def __init__(self, vision_config=None, audio_config=None, **kwargs):
        v = MINICPMV_VISION if vision_config is None else vision_config
        self.vision_config = v if isinstance(v, SiglipVisionConfig) else SiglipVisionConfig(**v)
        a = {} if audio_config is None else audio_config
        self.audio_config = a if isinstance(a, WhisperConfig) else WhisperConfig(**a)
        for k, val in kwargs.items():
            setattr(self, k, val)
        super().__init__(**kwargs)


def register():
    AutoConfig.register(MiniCPMOConfig.model_type, MiniCPMOConfig, exist_ok=True)
