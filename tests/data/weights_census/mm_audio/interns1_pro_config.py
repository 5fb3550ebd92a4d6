# ruff: noqa
"""Intern-S1-Pro's remote-code config classes (configuration_interns1_pro.py of
internlm/Intern-S1-Pro), rewritten: transformers 5.20.2 and vLLM 0.33 have none (README.md).
The text config keeps every key as an attribute over the remote class's defaults (vocab 151,936,
hidden 2,048, 24 layers, 16 heads, 60 experts of 1,408, top 4, rope_theta 5e6, ...) and its
``rope_scaling`` (the FoPE keys vLLM reads); the vision config Qwen3-VL's keys over the remote
defaults (depth 27, 1,152 wide, out 3,584, 2,304 positions; no deepstack_visual_indexes).
`register()` registers the three with AutoConfig so vLLM loads the configs as it would the
remote classes."""
from transformers import AutoConfig, PreTrainedConfig

TEXT_DEFAULTS = {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
                 "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
                 "hidden_act": "silu", "max_position_embeddings": 128000, "rms_norm_eps": 1e-6,
                 "rope_theta": 5000000.0, "attention_bias": False, "decoder_sparse_step": 1,
                 "moe_intermediate_size": 1408, "num_experts_per_tok": 4, "num_experts": 60,
                 "norm_topk_prob": True, "mlp_only_layers": [], "rope_scaling": None,
                 "head_dim": None}
VISION_DEFAULTS = {"depth": 27, "hidden_size": 1152, "hidden_act": "gelu_pytorch_tanh",
                   "intermediate_size": 4304, "num_heads": 16, "in_channels": 3,
                   "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
                   "out_hidden_size": 3584, "num_position_embeddings": 2304}
SUBSTITUTIONS = [
    "remote-code config classes InternS1ProConfig / InternS1ProTextConfig / "
    "InternS1ProVisionConfig registered with AutoConfig (see "
    "weights_census/mm_audio/interns1_pro_config.py)"]


class InternS1ProTextConfig(PreTrainedConfig):
    model_type = "interns1_pro_text"
    base_config_key = "text_config"

    def __init__(self, **kwargs):
        given = {**TEXT_DEFAULTS, **kwargs}
        if given["head_dim"] is None:
            given["head_dim"] = given["hidden_size"] // given["num_attention_heads"]
        tie = given.pop("tie_word_embeddings", False)
        for k, v in given.items():
            setattr(self, k, v)
        PreTrainedConfig.__init__(self, tie_word_embeddings=tie, **given)
        # (PreTrainedConfig's RoPE standardisation may rewrite it: the remote class keeps it)
        self.rope_scaling = given["rope_scaling"]


class InternS1ProVisionConfig(PreTrainedConfig):
    model_type = "interns1_pro_vision"
    base_config_key = "vision_config"

    def __init__(self, **kwargs):
        given = {**VISION_DEFAULTS, **kwargs}
        PreTrainedConfig.__init__(self, **given)
        for k, v in given.items():
            setattr(self, k, v)


class InternS1ProConfig(PreTrainedConfig):
    model_type = "interns1_pro"
    sub_configs = {"vision_config": InternS1ProVisionConfig,
                   "text_config": InternS1ProTextConfig}

    def __init__(self, text_config=None, vision_config=None, tie_word_embeddings=False,
                 **kwargs):
        self.vision_config = InternS1ProVisionConfig(**(vision_config or {})) \
            if not isinstance(vision_config, PreTrainedConfig) else vision_config
        self.text_config = InternS1ProTextConfig(**(text_config or {})) \
            if not isinstance(text_config, PreTrainedConfig) else text_config
        for k, v in kwargs.items():
            setattr(self, k, v)
        super().__init__(tie_word_embeddings=tie_word_embeddings, **kwargs)


def register():
    for c in (InternS1ProConfig, InternS1ProTextConfig, InternS1ProVisionConfig):
        AutoConfig.register(c.model_type, c, exist_ok=True)
