# ruff: noqa
"""Molmo2's remote-code config classes (model_type molmo2: configuration_molmo2.py of
allenai/Molmo2-8B, -4B and -O-7B, whose auto_map names them), rewritten for the recorders:
transformers 5.20.2's own Molmo2Config names its nested configs' fields otherwise
(vision_feature_layer, rms_norm_eps, no vit_config: vLLM's molmo2.py fails on it with
"AttributeError: 'Molmo2Config' object has no attribute 'vit_config'"), and remote code cannot
be fetched offline. Each config a PreTrainedConfig keeping every key of its config.json object
as an attribute, set before PreTrainedConfig's own __init__ (whose RoPE standardisation reads
the text config's rope_theta into rope_parameters, which vLLM's molmo2.py reads); the wrapper
builds vit_config, adapter_config and text_config so from their dicts. Registered with
AutoConfig for model_type molmo2 over transformers' own (exist_ok).
"""
from transformers import AutoConfig, PreTrainedConfig

SUBSTITUTIONS = [
    "model_type molmo2: molmo2_config.py's Molmo2Config registered with AutoConfig over "
    "transformers' own (the checkpoints' remote-code config classes, rewritten: every "
    "config.json key an attribute, vit_config / adapter_config / text_config nested alike)"]


class Molmo2SubConfig(PreTrainedConfig):
    model_type = "molmo2_sub"

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, **kwargs)


class Molmo2Config(PreTrainedConfig):
    model_type = "molmo2"

    def __init__(self, vit_config=None, adapter_config=None, text_config=None, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.vit_config = Molmo2SubConfig(**(vit_config or {}))
        self.adapter_config = Molmo2SubConfig(**(adapter_config or {}))
        self.text_config = Molmo2SubConfig(**(text_config or {}))
        PreTrainedConfig.__init__(self, **kwargs)


def register():
    AutoConfig.register("molmo2", Molmo2Config, exist_ok=True)
