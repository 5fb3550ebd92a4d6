"""Phi-3-vision's and Phi-3.5-vision's image embedder (``Phi3VForCausalLM``, model_type phi3_v,
remote code) as vLLM 0.33 builds it (phi3v.py), per TP rank, beside the Llama language model
vLLM builds from the same config.

`Phi3HDImageEmbedding`: vLLM's own CLIP ViT-L/14-336 (`CLIP_VIT_LARGE_PATCH14_336_CONFIG`,
whatever the config says) cut to the layer ``img_processor.layer_idx`` reads (default -2: 23 of
24 layers; its post LayerNorm only when all 24 are built), ``glb_GN`` and ``sub_GN`` (each
4 x ``img_processor.image_dim_out``) and ``img_projection``, two biased nn.Linear (4 x
image_dim_out to the text hidden size, then hidden to hidden), whole on every rank. The class
also builds its own ``embed_tokens`` (a VocabParallelEmbedding, split over TP as the language
model's, which keeps its own too) with the tower, dropped with it when the image limit is 0.
Buffers: CLIP's 577 int64 ``position_ids``. ``--mm-encoder-tp-mode data`` not taken. The
encoder's linears take the quant_config (census weights_census/quant_towers3/). Checked
per rank against vLLM's classes on the meta device
(tests/data/weights_census/mm_minicpm_idefics_phi/).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.clip_siglip import CLIP_DEFAULTS, encoder, encoder_linears
from kvcore.models.rank_params import VOCAB_PAD
from kvcore.models.vision_keys import VisionParams, config_int

CLIP_L_336 = {**CLIP_DEFAULTS, "hidden_size": 1024, "intermediate_size": 4096,
              "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 336,
              "patch_size": 14}


def _hd_transform(cfg: dict[str, Any], source: str) -> None:
    """Refuses an ``embd_layer`` vLLM's Phi3HDImageEmbedding cannot build from: not an object
    (it calls .get on it), or without both ``use_hd_transform`` and
    ``with_learnable_separator`` (it asserts them); kvcli sized the tower whatever it held."""
    embd = cfg.get("embd_layer")
    if not isinstance(embd, dict):
        raise InputError(f"must be an object, got {clipped(embd)}: vLLM's Phi3V reads the "
                         "image embedding's settings from it", path=source or None,
                         field="embd_layer")
    for key in ("use_hd_transform", "with_learnable_separator"):
        if not embd.get(key, False):
            raise InputError(f"got {clipped(embd.get(key))}: vLLM's Phi3V asserts "
                             "use_hd_transform and with_learnable_separator",
                             path=source or None, field=f"embd_layer.{key}")


def phi3v_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    proc = cfg.get("img_processor")
    if not isinstance(proc, dict):
        raise InputError(f"must be an object, got {clipped(proc)}: vLLM's Phi3V reads the "
                         "CLIP tower's layer and width from it", path=source or None,
                         field="img_processor")
    _hd_transform(cfg, source)
    n = CLIP_L_336["num_hidden_layers"]
    idx = config_int(proc, "layer_idx", -2, "img_processor.layer_idx", source, -n)
    layers = n + idx + 1 if idx < 0 else idx + 1
    if layers > n:      # (vLLM's CLIP refuses more layers than it has)
        raise InputError(f"reads layer {layers} of a CLIP tower of {n}, which vLLM refuses",
                         path=source or None, field="img_processor.layer_idx")
    vocab = config_int(cfg, "vocab_size", 32064, "vocab_size", source, 1)   # (Phi3VConfig's)
    dim_out = config_int(proc, "image_dim_out", None, "img_processor.image_dim_out", source, 1)
    enc = encoder("clip", {}, CLIP_L_336, layers, layers == n, source)
    wide, h = 4 * dim_out, text_hidden
    whole = 2 * wide + wide * h + h + h * h + h
    embed = -(-vocab // VOCAB_PAD) * VOCAB_PAD * h     # (split over TP)
    # (the CLIP encoder's linears take the quant_config, at vLLM's path; img_projection's two
    # are plain nn.Linear)
    d, inter = CLIP_L_336["hidden_size"], CLIP_L_336["intermediate_size"]
    linears = encoder_linears(layers, d, inter, True,
                              "model.vision_embed_tokens.img_processor.vision_model.encoder")
    return VisionParams(enc.total + whole + embed, enc.whole + whole, enc.heads, ("image",),
                        linears=linears, buffers=enc.buffers)
