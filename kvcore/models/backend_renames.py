"""A checkpoint's module names as vLLM 0.33's Transformers backend renames them
(models/transformers/base.py ``_create_hf_to_vllm_mapper``), which the quantisation configs
apply to their lists before matching (Fp8Config.apply_vllm_mapper, by the mapper's renames
only): vLLM holds the Transformers base model at ``model.``, so

- the base model's own prefix (GPT-NeoX's ``gpt_neox.``, GPTBigCode's ``transformer.``)
  becomes ``model.``;
- a name starting with one of the base model's children without a prefix
  (``layers.1.mlp.fc1``, ``h.0.attn.c_attn``) gains ``model.``;
- ``model.`` before anything that is not a child is dropped;
- an ``lm_head`` nested in the base model moves to the top.

Each pattern applied in turn, as WeightsMapper applies its regexes. The children are those of
the base model transformers builds for the class (checked with the oracle's transformers;
GPTBigCode's causal-mask buffer ``bias`` among them). Checked against vLLM's builds:
tests/data/weights_census/family_lists/ (gpt-neox, phi, starcoder, starcoder2
``-fp8-skip-own``).
"""

from __future__ import annotations

import re

# architecture: (HF's base_model_prefix, the base model's children, parameters and buffers)
_BASE: dict[str, tuple[str, tuple[str, ...]]] = {
    "GPTNeoXForCausalLM": ("gpt_neox", ("embed_in", "emb_dropout", "layers",
                                        "final_layer_norm", "rotary_emb")),
    "PhiForCausalLM": ("model", ("embed_tokens", "layers", "rotary_emb", "embed_dropout",
                                 "final_layernorm")),
    "GPTBigCodeForCausalLM": ("transformer", ("wte", "wpe", "drop", "h", "ln_f", "bias")),
    "Starcoder2ForCausalLM": ("model", ("embed_tokens", "layers", "norm", "rotary_emb")),
}


def _patterns(prefix: str, children: tuple[str, ...]) -> list[tuple[re.Pattern[str], str]]:
    either = "|".join(children)
    out = [(re.compile(rf"^{prefix}\.(.+)"), r"model.\1")] if prefix != "model" else []
    return [*out,
            (re.compile(rf"^(?!model\.)(({either}).*)"), r"model.\1"),
            (re.compile(rf"^(model\.)((?!{either}).+)"), r"\2"),
            (re.compile(r"^model\.(.+\.)*(lm_head.+)"), r"\2")]


_PATTERNS = {arch: _patterns(*base) for arch, base in _BASE.items()}


def served(arch: str) -> bool:
    """Whether kvcli renames `arch`'s lists as the Transformers backend does."""
    return arch in _PATTERNS


def backend_name(name: str, arch: str) -> str:
    """`name` as the backend's mapper for `arch` renames it."""
    for pattern, new in _PATTERNS[arch]:
        if pattern.search(name):
            name = pattern.sub(new, name)
    return name
