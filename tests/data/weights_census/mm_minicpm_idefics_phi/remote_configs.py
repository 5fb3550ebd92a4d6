# ruff: noqa
"""MiniCPM-V's, Phi-3-vision's and Phi-4-multimodal's remote-code config classes, rewritten
(transformers 5.20.2 and vLLM have none; README.md): plain PreTrainedConfig subclasses that keep
every key of config.json as an attribute (Phi-3-vision's and Phi-4's set before
PreTrainedConfig's own __init__, whose RoPE standardisation would otherwise swallow
rope_scaling) and, for MiniCPM-V, make ``vision_config`` a SiglipVisionConfig as its
configuration_minicpm.py does (its default: so400m at 980 px). `register()` registers them with
AutoConfig for their model_type, so vLLM loads these configs as it would the remote classes.
Used by record_towers.py here and ../../kv_spec_census/record_kv_specs.py."""
from transformers import AutoConfig, PreTrainedConfig, SiglipVisionConfig

# configuration_minicpm.py's default_vision_config (MiniCPM-V 2.5, 2.6, 4.0, 4.5 alike)
MINICPMV_VISION = {"hidden_size": 1152, "image_size": 980, "intermediate_size": 4304,
                   "model_type": "siglip", "num_attention_heads": 16,
                   "num_hidden_layers": 27, "patch_size": 14}
SUBSTITUTIONS = [
    "remote-code config classes (MiniCPMVConfig, Phi3VConfig, Phi4MMConfig) registered "
    "with AutoConfig: every config.json key an attribute; MiniCPM-V's vision_config a "
    "SiglipVisionConfig (see weights_census/mm_minicpm_idefics_phi/remote_configs.py)"]


class MiniCPMVConfig(PreTrainedConfig):
    model_type = "minicpmv"

    def __init__(self, vision_config=None, **kwargs):
        v = MINICPMV_VISION if vision_config is None else vision_config
        self.vision_config = v if isinstance(v, SiglipVisionConfig) else SiglipVisionConfig(**v)
        super().__init__(**kwargs)


def _every_key(self, kwargs):
    """Every key an attribute before PreTrainedConfig's __init__ sees it. Each class defines
    its own __init__: transformers makes a subclass without one a dataclass."""
    for k, v in kwargs.items():
        setattr(self, k, v)
    PreTrainedConfig.__init__(self, **kwargs)


class Phi3VConfig(PreTrainedConfig):
    model_type = "phi3_v"

    def __init__(self, **kwargs):
        _every_key(self, kwargs)


class Phi4MMConfig(PreTrainedConfig):
    model_type = "phi4mm"

    def __init__(self, **kwargs):
        _every_key(self, kwargs)


def register():
    for c in (MiniCPMVConfig, Phi3VConfig, Phi4MMConfig):
        AutoConfig.register(c.model_type, c, exist_ok=True)
