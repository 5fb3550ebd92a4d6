"""MiniCPM-V (``MiniCPMV``, model_type minicpmv, remote code) as vLLM 0.33 builds it
(minicpmv.py), per TP rank: the language model its ``version`` picks and, beside it, the
vision tower and resampler.

* ``version`` (absent: 2.0 where hidden_size is 2304 and query_num 64, else 2.5): 2.0 builds
  MiniCPM, 2.5 and 4.0 Llama, 2.6 Qwen2 (a biased QKV), 4.5 Qwen3 (q/k norms); any other is
  refused (`_SUPPORT_VERSION`).
* The tower (2.5 on): `Idefics2VisionTransformer` (`kvcore.models.idefics3.navit`) of the
  ``vision_config`` (a SiglipVisionConfig; absent: the remote class's so400m at 980 px), less
  its last layer where ``drop_vision_last_layer`` (the remote class's default: true).
* The resampler (`Resampler2_5`; 4.5's `Resampler4_5`), whole on every rank: query_num
  queries of the text hidden size E, a kv_proj (vision hidden x E, no bias) unless the widths
  match, an nn.MultiheadAttention (E // 128 heads: in_proj 3E x E and out_proj, biased), three
  LayerNorms and the E x E proj. Its sin-cos tables are buffers in the model dtype: 70 x 70
  x E, and 4.5's 36,000 temporal rows x E.
* ``--mm-encoder-tp-mode data`` taken (the tower whole on every rank); images and videos.
* A quantised checkpoint: the tower's four linears a layer and the resampler's kv_proj take
  the quant_config (`kvcore.models.tower_int_quant`; census weights_census/quant_towers3/).
2.0's timm SigLIP tower is not counted (the uncounted-tower warning stays). Checked per rank
against vLLM's classes on the meta device (tests/data/weights_census/mm_minicpm_idefics_phi/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import SIGLIP_DEFAULTS
from kvcore.models.idefics3 import navit
from kvcore.models.vision_keys import VisionLinear, VisionParams, vision_dim

# configuration_minicpm.py's default_vision_config: SigLIP so400m at 980 px
DEFAULT_VISION = {**SIGLIP_DEFAULTS, "hidden_size": 1152, "image_size": 980,
                  "intermediate_size": 4304, "num_attention_heads": 16,
                  "num_hidden_layers": 27, "patch_size": 14}
# (the remote class's query_num default: 64)
# the language model vLLM builds for each version, as the model_type kvcli reads it as
LLM_TYPES = {(2, 0): "minicpm", (2, 5): "llama", (2, 6): "qwen2", (4, 0): "llama",
             (4, 5): "qwen3"}
POS_SIDE = 70             # (Resampler2_5's max_size)
TEMPORAL_ROWS = 36_000    # (Resampler4_5's max_temporal_size)


def version(cfg: dict[str, Any], source: str) -> tuple[int, int]:
    """vLLM's `get_version_by_config`, refusing what `MiniCPMV.__new__` refuses."""
    given = cfg.get("version")
    if given is None:
        return (2, 0) if cfg.get("hidden_size") == 2304 and cfg.get("query_num") == 64 \
            else (2, 5)
    parts = str(given).split(".")
    v = tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else ()
    if len(v) != 2 or v not in LLM_TYPES:
        raise InputError(f"{clipped(given)}: vLLM's MiniCPMV supports versions 2.0, 2.5, 2.6, "
                         "4.0, 4.5", path=source or None, field="version")
    return v[0], v[1]


def llm_type(cfg: dict[str, Any], source: str) -> str:
    """The model_type of the language model vLLM builds for a minicpmv config."""
    return LLM_TYPES[version(cfg, source)]


def minicpmv_params(cfg: dict[str, Any], text_hidden: int, source: str,
                    dtype_bytes: int) -> VisionParams:
    ver = version(cfg, source)
    if ver == (2, 0):
        return VisionParams(0, 0)
    v = cfg.get("vision_config")
    if v is not None and not isinstance(v, dict):
        raise InputError(f"must be an object (or null), got {clipped(v)}",
                         path=source or None, field="vision_config")
    v, defaults = (DEFAULT_VISION, DEFAULT_VISION) if v is None else (v, SIGLIP_DEFAULTS)
    layers = vision_dim(v, defaults, "num_hidden_layers", source)
    enc = navit(v, defaults, layers - bool(cfg.get("drop_vision_last_layer", True)), source,
                at="vpm")
    d, e = vision_dim(v, defaults, "hidden_size", source), text_hidden
    # (the resampler's kv_proj, a ReplicatedLinear, takes the quant_config, and is cast to
    # the model dtype with it; its attention is torch's nn.MultiheadAttention, which no method
    # reaches)
    kv = (VisionLinear("resampler.kv_proj", (e,), d, "replicated", cast=True),) if d != e \
        else ()
    queries = vision_dim(cfg, {"query_num": 64}, "query_num", source, key_of="")
    resampler = (queries * e + (d * e if d != e else 0) + 3 * e * e + 3 * e + e * e + e
                 + 6 * e + e * e)
    rows = POS_SIDE * POS_SIDE + (TEMPORAL_ROWS if ver == (4, 5) else 0)
    return VisionParams(enc.total + resampler, enc.whole + resampler, enc.heads,
                        ("image", "video"), True, enc.linears + kv,
                        buffers=rows * e * dtype_bytes)
