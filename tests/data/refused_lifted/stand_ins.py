# ruff: noqa
"""Config classes for the refused classes whose checkpoints bring their own as remote code
(transformers 5.20.2 has none), for record_refused.py. A development tool, never run by the
tests.

- Sarvam's MLA checkpoints (model_type ``sarvam_mla``): `SarvamMLAConfig` keeps every key of
  the config.json as an attribute and defaults none, so vLLM's sarvam.py reads a missing key
  through its own getattr defaults (first_k_dense_replace 1, intermediate_size 16384, ...),
  as it would from a remote class that leaves the key unset.
- Domyn Edge's (model_type ``domyn_edge``, a guess: no published config here):
  `DomynEdgeConfig`, the same, its ``per_layer_config`` (overrides by layer index) read by
  transformers' own heterogeneous-config support (``config.per_layer_config[i].head_dim``).
"""
from transformers import AutoConfig, PretrainedConfig


class SarvamMLAConfig(PretrainedConfig):
    model_type = "sarvam_mla"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


# (short lines: README.md says each in full)
SUBSTITUTIONS = ["1. sarvam_mla: a PretrainedConfig keeping the file's keys (stand_ins.py)"]


def register():
    AutoConfig.register("sarvam_mla", SarvamMLAConfig, exist_ok=True)


class DomynEdgeConfig(PretrainedConfig):
    """Domyn Edge's remote class: every key kept, ``per_layer_config`` (a layer's overrides,
    read as ``config.per_layer_config[i].head_dim``) handled by transformers' own
    heterogeneous-config support."""
    model_type = "domyn_edge"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


SUBSTITUTIONS.append("3. domyn_edge: a PretrainedConfig keeping the file's keys (stand_ins.py)")
_register = register


def register():
    _register()
    AutoConfig.register("domyn_edge", DomynEdgeConfig, exist_ok=True)


class PanguProMoEV2Config(PretrainedConfig):
    """openPangu Pro MoE V2's remote class (model_type ``pangu_pro_moe_v2``, a guess): every
    key kept, none defaulted, so openpangu.py's hasattr / getattr tests read the file."""
    model_type = "pangu_pro_moe_v2"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


SUBSTITUTIONS.append("4. pangu_pro_moe_v2: a PretrainedConfig keeping the file's keys "
                     "(stand_ins.py)")
_register_domyn = register


def register():
    _register_domyn()
    AutoConfig.register("pangu_pro_moe_v2", PanguProMoEV2Config, exist_ok=True)


class IQuestLoopCoderConfig(PretrainedConfig):
    """IQuest-Coder's Loop remote class (model_type ``iquestloopcoder``): every key kept, none
    defaulted, so iquest_loopcoder.py's getattr defaults (loop_num 2, loop_window_size 64)
    read a key the file leaves out."""
    model_type = "iquestloopcoder"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)


SUBSTITUTIONS.append("5. iquestloopcoder: a PretrainedConfig keeping the file's keys "
                     "(stand_ins.py)")
_register_pangu = register


def register():
    _register_pangu()
    AutoConfig.register("iquestloopcoder", IQuestLoopCoderConfig, exist_ok=True)


SUBSTITUTIONS.append("6. the ViT attention backend TORCH_SDPA where a class names another "
                     "(UnlimitedOCRForCausalLMConfig names FLASH_ATTN, which the CPU "
                     "platform refuses; no parameter, no KV spec)")
_register_iquest = register


def register():
    """(the vision encoder's attention backend holds no weight: DeepSeek-OCR's own recording
    built its tower on TORCH_SDPA, the CPU platform's one choice)"""
    _register_iquest()
    from vllm.platforms import current_platform
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    current_platform.get_vit_attn_backend = (
        lambda head_size, dtype, backend=None: AttentionBackendEnum.TORCH_SDPA)
