# ruff: noqa
"""What this folder's classes need to be built here (imported by
../../kv_spec_census/census_configs.py, so by every recorder; a development tool).

The remote-code config class LLaVA-OneVision-2 brings (model_type ``llava_onevision2``;
transformers 5.20.2 and vLLM 0.33 have none), rewritten: a PreTrainedConfig that keeps every key
of config.json as an attribute, its ``text_config`` transformers' Qwen3Config (llava_onevision2.py
hands it to qwen3.py as the text model's hf_config) and its ``vision_config`` a PreTrainedConfig
keeping every key (vLLM reads patch_size, hidden_size, ... off it). `register()` registers it
with AutoConfig, so vLLM loads these configs as it would the remote class. Used by
record_towers.py here and ../../kv_spec_census/census_configs.py.

Isaac's class looks its ``vision_token`` up in the tokenizer as it is built (isaac.py
`_resolve_vision_token_id`); no tokenizer files here: a stand-in whose encode answers one id (an
int kept on the config; no tensor).

Nemotron Omni's classes (NemotronH_*Omni_Reasoning_V3: vLLM builds NemotronH_Nano_VL_V2 for
them) are recorded with the Nemotron Nano VL V2 remote config class (../mm_nemo/
nemo_vl_config.py), whose ``sound_config`` (the Parakeet encoder vLLM builds beside RADIO where
there is one) `register()` makes a PretrainedConfig carrying its keys (vLLM asserts one)."""
from transformers import AutoConfig, PreTrainedConfig, Qwen3Config

SUBSTITUTIONS = [
    "LLaVA-OneVision-2's remote-code config class (model_type llava_onevision2) registered "
    "with AutoConfig: every config.json key an attribute, text_config a Qwen3Config, "
    "vision_config keeping every key (weights_census/mm_towers12b/towers12b_config.py)",
    "Isaac: cached_tokenizer_from_config a stand-in whose encode answers one token id",
    "NemotronNanoVLV2Config (mm_nemo) keeps a sound_config as a PretrainedConfig carrying its "
    "keys (weights_census/mm_towers12b/towers12b_config.py)"]


def _every_key(self, kwargs):
    for k, v in kwargs.items():
        setattr(self, k, v)
    PreTrainedConfig.__init__(self, **kwargs)


class Ov2VisionConfig(PreTrainedConfig):
    model_type = "llava_onevision2_vision"

    def __init__(self, **kwargs):
        _every_key(self, kwargs)


class LlavaOnevision2Config(PreTrainedConfig):
    model_type = "llava_onevision2"
    sub_configs = {"text_config": Qwen3Config, "vision_config": Ov2VisionConfig}

    def __init__(self, text_config=None, vision_config=None, **kwargs):
        t, v = text_config or {}, vision_config or {}
        self.text_config = t if isinstance(t, PreTrainedConfig) else Qwen3Config(**t)
        self.vision_config = v if isinstance(v, PreTrainedConfig) else Ov2VisionConfig(**v)
        _every_key(self, kwargs)


def _tokenizer_stand_in(model_config):
    import types
    return types.SimpleNamespace(encode=lambda text, add_special_tokens=False: [151655])


def register():
    AutoConfig.register(LlavaOnevision2Config.model_type, LlavaOnevision2Config, exist_ok=True)
    from vllm.model_executor.models import isaac
    isaac.cached_tokenizer_from_config = _tokenizer_stand_in
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mm_nemo"))
    import nemo_vl_config       # (the module record_kv_specs.py registers, patched first)
    cls = nemo_vl_config.NemotronNanoVLV2Config
    if getattr(cls, "_with_sound", False):
        return
    init, to_dict = cls.__init__, cls.to_dict

    def with_sound(self, sound_config=None, **kwargs):
        init(self, **kwargs)
        if sound_config is not None:
            self.sound_config = (sound_config if isinstance(sound_config, PreTrainedConfig)
                                 else SoundConfig(**sound_config))

    def sound_dict(self):
        out = to_dict(self)
        if getattr(self, "sound_config", None) is not None:
            out["sound_config"] = self.sound_config.to_dict()
        return out
    cls.__init__, cls.to_dict, cls._with_sound = with_sound, sound_dict, True


class SoundConfig(PreTrainedConfig):
    model_type = "parakeet_sound_remote"

    def __init__(self, **kwargs):
        _every_key(self, kwargs)
