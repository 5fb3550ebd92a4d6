# ruff: noqa
"""Keye-VL's remote-code config classes (Kwai-Keye's configuration_keye.py, model_types Keye and
KeyeVL1_5; transformers 5.20.2 and vLLM have none), rewritten: plain PreTrainedConfig
subclasses that keep every key of config.json as an attribute (set before PreTrainedConfig's
own __init__), the ``vision_config`` an object of the same kind (vLLM reads hidden_size,
image_size, patch_size ... off it). `register()` registers them with AutoConfig, so vLLM loads
these configs as it would the remote classes. Used by record_towers.py here."""
from transformers import AutoConfig, PreTrainedConfig

SUBSTITUTIONS = [
    "remote-code config classes (Keye-VL's, model_types Keye and KeyeVL1_5) registered with "
    "AutoConfig: every config.json key an attribute, its vision_config too (see "
    "weights_census/mm_ernie/keye_config.py)"]


def _every_key(self, kwargs):
    for k, v in kwargs.items():
        setattr(self, k, v)
    PreTrainedConfig.__init__(self, **kwargs)


class KeyeVisionConfig(PreTrainedConfig):
    model_type = "keye_vision"

    def __init__(self, **kwargs):
        _every_key(self, kwargs)


def _with_vision(self, vision_config, kwargs):
    v = vision_config or {}
    self.vision_config = v if isinstance(v, PreTrainedConfig) else KeyeVisionConfig(**v)
    _every_key(self, kwargs)


class KeyeConfig(PreTrainedConfig):
    model_type = "Keye"

    def __init__(self, vision_config=None, **kwargs):
        _with_vision(self, vision_config, kwargs)


class KeyeVL1_5Config(PreTrainedConfig):
    model_type = "KeyeVL1_5"

    def __init__(self, vision_config=None, **kwargs):
        _with_vision(self, vision_config, kwargs)


def register():
    for c in (KeyeConfig, KeyeVL1_5Config):
        AutoConfig.register(c.model_type, c, exist_ok=True)
