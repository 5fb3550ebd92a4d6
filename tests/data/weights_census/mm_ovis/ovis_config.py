# ruff: noqa
"""Ovis2.5's remote-code config classes (configuration_ovis2_5.py of AIDC-AI/Ovis2.5-9B, which
Ovis2.6's checkpoints reuse), rewritten: transformers 5.20.2 and vLLM 0.33 have none (vLLM has
one for Ovis 1.6 / 2 only: configs/ovis.py). `Siglip2NavitConfig` keeps every key of
``vit_config`` as an attribute over the remote class's defaults (as remembered);
`Ovis2_5Config` builds its ``llm_config`` with AutoConfig by its model_type (qwen3, qwen3_moe)
and its ``vit_config`` with `Siglip2NavitConfig`, as the remote class does; vLLM renames
``llm_config`` to ``text_config`` itself (transformers_utils/config.py). `register()` registers
both with AutoConfig so vLLM loads the configs as it would the remote classes (and
eagle_opencua_config.py's; ../../kv_spec_census/census_configs.py calls it)."""
from transformers import AutoConfig, PreTrainedConfig

import eagle_opencua_config      # (Eagle 2.5's and OpenCUA's, this folder's: registered too)
import kanana_config             # (Kanana-V's, the same)

VIT_DEFAULTS = {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                "num_attention_heads": 16, "num_channels": 3, "num_patches": -1,
                "image_size": 512, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh",
                "layer_norm_eps": 1e-6, "attention_dropout": 0.0, "hidden_stride": 2,
                "window_size": 112, "fullatt_block_indexes": None, "temporal_patch_size": 1,
                "preserve_original_pe": True, "use_rope": True}
SUBSTITUTIONS = [
    "remote-code config classes Ovis2_5Config / Siglip2NavitConfig registered with AutoConfig "
    "for model_type ovis2_5 / siglip2_navit (see weights_census/mm_ovis/ovis_config.py)",
    "Ovis2_5ProcessingInfo constructed without its HF processor (its __init__ loads it, to "
    "decide whether the model takes multimodal inputs; no processor files here; no tensor)",
    *eagle_opencua_config.SUBSTITUTIONS, *kanana_config.SUBSTITUTIONS]


class Siglip2NavitConfig(PreTrainedConfig):
    model_type = "siglip2_navit"

    def __init__(self, **kwargs):
        given = {**VIT_DEFAULTS, **kwargs}
        PreTrainedConfig.__init__(self, **given)
        for k, v in given.items():
            setattr(self, k, v)


class Ovis2_5Config(PreTrainedConfig):
    model_type = "ovis2_5"

    def __init__(self, llm_config=None, vit_config=None, visual_vocab_size=65536,
                 hidden_size=None, **kwargs):
        PreTrainedConfig.__init__(self, **kwargs)
        if isinstance(llm_config, dict):
            llm_config = dict(llm_config)
            llm_config = AutoConfig.for_model(llm_config.pop("model_type"), **llm_config)
        self.llm_config = llm_config
        if isinstance(vit_config, dict):
            vit_config = Siglip2NavitConfig(**vit_config)
        self.vit_config = vit_config
        self.visual_vocab_size = visual_vocab_size
        self.hidden_size = hidden_size


def register():
    # (Ovis2_5ProcessingInfo loads the HF processor when constructed, which ModelConfig does
    # to ask whether the model takes multimodal inputs: no processor files here)
    from vllm.model_executor.models import ovis2_5
    from vllm.multimodal.processing import BaseProcessingInfo
    ovis2_5.Ovis2_5ProcessingInfo.__init__ = BaseProcessingInfo.__init__
    AutoConfig.register("siglip2_navit", Siglip2NavitConfig, exist_ok=True)
    AutoConfig.register("ovis2_5", Ovis2_5Config, exist_ok=True)
    eagle_opencua_config.register()
    kanana_config.register()
