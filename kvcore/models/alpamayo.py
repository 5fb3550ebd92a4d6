"""Alpamayo 2 Super (`Alpamayo2Super`, vLLM 0.33's alpamayo2_super.py): a Qwen3-VL model that
vLLM serves as Qwen3VLForConditionalGeneration (its tower and text model:
`kvcore.models.vision_towers` QWEN3_VL). The released checkpoint nests the Qwen3-VL config under
``vlm_config``; vLLM's Alpamayo2SuperConfig lifts its ``text_config`` and ``vision_config`` (and
its token ids) to the top before Qwen3-VL reads them, so kvcli reads them there too
(`vlm_unwrapped`); the trajectory expert beside it is not built."""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped

MODEL_TYPE = "alpamayo2_super"


def vlm_unwrapped(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """An Alpamayo 2 Super config with its ``vlm_config``'s text and vision configs at the top
    (the nested ones first, as Alpamayo2SuperConfig takes them); any other config unchanged."""
    if cfg.get("model_type") != MODEL_TYPE or cfg.get("vlm_config") is None:
        return cfg
    nested = cfg["vlm_config"]
    if not isinstance(nested, dict):
        raise InputError(f"must be an object, got {clipped(nested)}: Alpamayo2SuperConfig "
                         "reads the Qwen3-VL config from it", path=source or None,
                         field="vlm_config")
    lifted = {k: nested[k] for k in ("text_config", "vision_config") if k in nested}
    return {**cfg, **lifted}
