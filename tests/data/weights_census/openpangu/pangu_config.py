# ruff: noqa
"""Dev tool (not a test): openPangu's config class for the recorders, registered on import.
The checkpoints ship their own (remote code, not fetchable offline; transformers 5.20 has
none), and vLLM reads only the keys the config.json gives: a PretrainedConfig holding them as
given, the positions set first as a remote class's own __init__ sets its fields first
(transformers' RoPE validation of a ``rope_scaling`` reads max_position_embeddings)."""
from transformers import AutoConfig, PretrainedConfig


class PanguUltraMoEConfig(PretrainedConfig):
    model_type = "pangu_ultra_moe"

    def __init__(self, **kwargs):
        self.max_position_embeddings = kwargs.pop("max_position_embeddings", 4096)
        super().__init__(**kwargs)


AutoConfig.register("pangu_ultra_moe", PanguUltraMoEConfig, exist_ok=True)
SUBSTITUTION = ("model_type pangu_ultra_moe: a PretrainedConfig holding the config.json's keys "
                "as given (the checkpoints' remote-code class, not fetchable offline)")
