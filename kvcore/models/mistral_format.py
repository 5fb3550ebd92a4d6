"""A Mistral-format checkpoint's ``params.json`` given as the model config: refused in one
line. vLLM serves such a checkpoint (``--config-format mistral``, the default where the
checkpoint has consolidated*.safetensors) by converting the params.json
(transformers_utils/configs/mistral.py `adapt_config_dict`); kvcli reads the converted config
as a config.json instead: the text model's keys under Hugging Face names (``dim`` as
``hidden_size``, ``n_layers`` as ``num_hidden_layers``, ``n_heads``, ``n_kv_heads``,
``hidden_dim`` as ``intermediate_size``, ``norm_eps`` as ``rms_norm_eps``,
``max_position_embeddings`` 128,000 where absent), and for a ``vision_encoder`` the wrapper
vLLM makes: ``architectures`` ["PixtralForConditionalGeneration"], the text keys under
``text_config`` (``model_type`` mistral) and the vision_encoder as ``vision_config``
(`kvcore.models.pixtral_mistral`; docs/config.md)."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

# keys only a Mistral params.json writes (a config.json has their Hugging Face names)
_MISTRAL_KEYS = ("dim", "n_layers", "n_heads")


def params_json_refusal(cfg: dict[str, Any], source: str) -> None:
    """A params.json (Mistral's keys, no architectures or model_type) refused, naming what to
    give instead."""
    if "architectures" in cfg or "model_type" in cfg:
        return
    if all(k in cfg for k in _MISTRAL_KEYS):
        raise InputError("a Mistral-format params.json, which kvcli does not read: give the "
                         "config vLLM converts it to, as a config.json (its keys under Hugging "
                         "Face names; a vision_encoder as PixtralForConditionalGeneration's "
                         "vision_config: docs/config.md)", path=source or None, field="dim")
