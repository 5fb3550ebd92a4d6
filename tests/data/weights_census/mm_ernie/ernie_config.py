# ruff: noqa
"""ERNIE-4.5-VL's remote-code config class (its -PT checkpoints' configuration_ernie4_5_vl.py;
transformers 5.20.2 has only the HF-format ernie4_5_vl_moe, with a text_config, which vLLM 0.33
cannot build: kv_spec_census records its AttributeError), rewritten: a plain PreTrainedConfig
that keeps every key of config.json as an attribute (set before PreTrainedConfig's own
__init__), its ``vision_config`` an object of the same kind (vLLM reads embed_dim, depth,
mlp_ratio ... off it as attributes). `register()` registers it with AutoConfig for model_type
ernie4_5_moe_vl, so vLLM loads these configs as it would the remote class. Used by
record_towers.py here and ../../kv_spec_census/record_kv_specs.py."""
from transformers import AutoConfig, PreTrainedConfig

SUBSTITUTIONS = [
    "remote-code config class (ERNIE-4.5-VL's Ernie4_5_VLMoEConfig, model_type "
    "ernie4_5_moe_vl) registered with AutoConfig: every config.json key an attribute, its "
    "vision_config too (see weights_census/mm_ernie/ernie_config.py)"]


def _every_key(self, kwargs):
    for k, v in kwargs.items():
        setattr(self, k, v)
    PreTrainedConfig.__init__(self, **kwargs)


class ErnieVisionConfig(PreTrainedConfig):
    model_type = "DFNRopeVisionTransformer"

    def __init__(self, **kwargs):
        _every_key(self, kwargs)


class ErnieVLConfig(PreTrainedConfig):
    model_type = "ernie4_5_moe_vl"

    def __init__(self, vision_config=None, **kwargs):
        v = vision_config or {}
        self.vision_config = v if isinstance(v, PreTrainedConfig) else ErnieVisionConfig(**v)
        _every_key(self, kwargs)


def register():
    AutoConfig.register(ErnieVLConfig.model_type, ErnieVLConfig, exist_ok=True)
