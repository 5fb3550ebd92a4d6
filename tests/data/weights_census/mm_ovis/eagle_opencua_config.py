# ruff: noqa
"""Eagle 2.5's and OpenCUA's remote-code config classes (configuration_eagle2_5_vl.py of
nvidia/Eagle2.5-8B, configuration_opencua.py of xlangai/OpenCUA-7B), rewritten: transformers
5.20.2 and vLLM 0.33 have none. Each keeps every top-level key of config.json as an attribute
and builds its ``text_config`` with AutoConfig by its model_type (qwen2) and its
``vision_config`` with transformers' own class (Eagle: SiglipVisionConfig by its model_type;
OpenCUA: Qwen2_5_VLVisionConfig), as the remote classes do. `register()` registers both with
AutoConfig for model_types eagle_2_5_vl and opencua."""
from transformers import AutoConfig, PreTrainedConfig
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig

SUBSTITUTIONS = [
    "remote-code config classes Eagle2_5_VLConfig / OpenCUAConfig registered with AutoConfig "
    "for model_type eagle_2_5_vl / opencua (see weights_census/mm_ovis/eagle_opencua_config.py)"]


def _sub(d, default_type):
    """A nested config dict as the remote classes build it (AutoConfig by its model_type)."""
    if not isinstance(d, dict):
        return d
    d = dict(d)
    return AutoConfig.for_model(d.pop("model_type", default_type), **d)


class Eagle2_5_VLConfig(PreTrainedConfig):
    model_type = "eagle_2_5_vl"

    def __init__(self, text_config=None, vision_config=None, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, **kwargs)
        self.text_config = _sub(text_config, "qwen2")
        self.vision_config = _sub(vision_config, "siglip_vision_model")


class OpenCUAConfig(PreTrainedConfig):
    model_type = "opencua"

    def __init__(self, text_config=None, vision_config=None, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, **kwargs)
        self.text_config = _sub(text_config, "qwen2")
        if isinstance(vision_config, dict):
            vision_config = Qwen2_5_VLVisionConfig(**vision_config)
        self.vision_config = vision_config


def register():
    AutoConfig.register("eagle_2_5_vl", Eagle2_5_VLConfig, exist_ok=True)
    AutoConfig.register("opencua", OpenCUAConfig, exist_ok=True)
