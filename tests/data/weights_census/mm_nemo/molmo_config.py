# ruff: noqa
"""Molmo's remote-code config class (model_type molmo: config_molmo.py of allenai/Molmo-7B-D-0924
and Molmo-7B-O-0924), rewritten for the recorders (transformers 5.20.2 and vLLM 0.33 have none;
remote code cannot be fetched offline): a PreTrainedConfig keeping every key of config.json as
an attribute, set before PreTrainedConfig's own __init__ (whose RoPE standardisation reads
rope_theta into rope_parameters, which vLLM's molmo.py reads). vLLM reads no nested config:
Molmo's vision tower is vLLM's own VisionBackboneConfig.
"""
from transformers import AutoConfig, PreTrainedConfig

SUBSTITUTIONS = [
    "model_type molmo: molmo_config.py's MolmoConfig registered with AutoConfig (the "
    "checkpoints' remote-code config class, rewritten: every config.json key an attribute)"]


# config_molmo.py's defaults (as remembered; every config here gives these keys itself)
DEFAULTS = dict(vocab_size=50304, embedding_size=50304, hidden_size=4096,
                intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                num_key_value_heads=None, max_position_embeddings=2048, layer_norm_eps=1e-5,
                rope_theta=10000.0, clip_qkv=None, qkv_bias=False, weight_tying=False,
                use_position_ids=True, tie_word_embeddings=True, attention_layer_norm=False,
                norm_after=False, layer_norm_type="rms")


class MolmoConfig(PreTrainedConfig):
    model_type = "molmo"

    def __init__(self, **kwargs):
        kwargs = {**DEFAULTS, **kwargs}
        for k, v in kwargs.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, **kwargs)


def register():
    AutoConfig.register("molmo", MolmoConfig, exist_ok=True)
