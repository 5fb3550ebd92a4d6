# ruff: noqa
"""Kanana-V's remote-code config class (kakaocorp/kanana-1.5-v-3b-instruct), rewritten:
transformers 5.20.2 and vLLM 0.33 have none. Every top-level key of config.json is kept as an
attribute; ``text_config`` is built by AutoConfig from its model_type (llama), ``vision_config``
with transformers' Qwen2VLVisionConfig and ``projector_config`` as a PreTrainedConfig keeping
every key (the C-Abstractor's sizes vLLM's kanana_v.py reads). The model_type ``kanana_v`` is
this rewrite's (what the published config names it is not known here). `register()` registers
it with AutoConfig."""
from transformers import AutoConfig, PreTrainedConfig
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig

SUBSTITUTIONS = [
    "remote-code config class KananaVConfig registered with AutoConfig for model_type kanana_v "
    "(see weights_census/mm_ovis/kanana_config.py)"]


class KananaVProjectorConfig(PreTrainedConfig):
    model_type = "kanana_v_projector"

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, **kwargs)


class KananaVConfig(PreTrainedConfig):
    model_type = "kanana_v"

    def __init__(self, text_config=None, vision_config=None, projector_config=None, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, **kwargs)
        if isinstance(text_config, dict):
            text_config = dict(text_config)
            text_config = AutoConfig.for_model(text_config.pop("model_type", "llama"),
                                               **text_config)
        self.text_config = text_config
        if isinstance(vision_config, dict):
            vision_config = Qwen2VLVisionConfig(**vision_config)
        self.vision_config = vision_config
        if isinstance(projector_config, dict):
            projector_config = KananaVProjectorConfig(**projector_config)
        self.projector_config = projector_config


def register():
    AutoConfig.register("kanana_v", KananaVConfig, exist_ok=True)
