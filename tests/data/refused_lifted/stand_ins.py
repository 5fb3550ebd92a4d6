# ruff: noqa
"""Config classes for the refused classes whose checkpoints bring their own as remote code
(transformers 5.20.2 has none), for record_refused.py. A development tool, never run by the
tests.

- Sarvam's MLA checkpoints (model_type ``sarvam_mla``): `SarvamMLAConfig` keeps every key of
  the config.json as an attribute and defaults none, so vLLM's sarvam.py reads a missing key
  through its own getattr defaults (first_k_dense_replace 1, intermediate_size 16384, ...),
  as it would from a remote class that leaves the key unset.
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
