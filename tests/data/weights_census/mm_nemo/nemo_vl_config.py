# ruff: noqa
"""NemotronH_Nano_VL_V2's remote-code config class (model_type NemotronH_Nano_VL_V2), written
for the recorder here after the configuration.py that nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL-*
ships (transformers 5.20.2 and vLLM 0.33 have no class for the model_type; remote code cannot
be fetched offline): the checkpoint's top-level fields as given; ``llm_config`` built as
transformers' NemotronHConfig (``AutoConfig.for_model("nemotron_h", ...)``, as the remote file
does); ``vision_config`` (the RADIO checkpoint's own RADIOConfig, remote too) a PretrainedConfig
carrying its fields as given: vLLM reads ``args`` (the timm model name, cpe_max_size,
teachers, cls_token_per_teacher, register_multiple), ``patch_size``,
``preferred_resolution``, ``video_temporal_patch_size`` and ``separate_video_embedder`` off it
(nano_nemotron_vl.py `get_vit_model_from_radio_config`). vLLM renames ``llm_config``
``text_config`` (transformers_utils/config.py `_CONFIG_ATTRS_MAPPING`).
"""
from transformers import AutoConfig, PretrainedConfig

TOP_DEFAULTS = dict(force_image_size=None, downsample_ratio=0.5, template=None,
                    ps_version="v1", image_tag_type="internvl", projector_hidden_size=4096,
                    vit_hidden_size=1280, video_pruning_rate=0.0)


class RadioVisionConfig(PretrainedConfig):
    model_type = "radio_remote"


class NemotronNanoVLV2Config(PretrainedConfig):
    model_type = "NemotronH_Nano_VL_V2"

    def __init__(self, vision_config=None, llm_config=None, **kwargs):
        fields = {k: kwargs.pop(k, v) for k, v in TOP_DEFAULTS.items()}
        super().__init__(**kwargs)
        self.vision_config = RadioVisionConfig(**dict(vision_config or {}))
        llm = dict(llm_config or {})
        llm.pop("model_type", None)
        self.llm_config = AutoConfig.for_model("nemotron_h", **llm)
        for k, v in fields.items():
            setattr(self, k, v)

    def to_dict(self):
        out = super().to_dict()
        out["vision_config"] = self.vision_config.to_dict()
        out["llm_config"] = self.llm_config.to_dict()
        out.pop("text_config", None)
        return out


SUBSTITUTIONS = [
    "model_type NemotronH_Nano_VL_V2: nemo_vl_config.py's NemotronNanoVLV2Config registered "
    "with AutoConfig (the checkpoint's remote-code config class, rewritten)",
    "nano_nemotron_vl.cached_tokenizer_from_config: a stand-in whose encode gives one id a "
    "string (the class tokenizes its image tags when built; no tensor)"]


def register():
    import types
    from vllm.model_executor.models import nano_nemotron_vl
    AutoConfig.register("NemotronH_Nano_VL_V2", NemotronNanoVLV2Config, exist_ok=True)
    nano_nemotron_vl.cached_tokenizer_from_config = lambda mc: types.SimpleNamespace(
        encode=lambda text, add_special_tokens=False: [18])
