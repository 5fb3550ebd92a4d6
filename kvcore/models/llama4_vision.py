"""Llama 4's vision model and multi-modal projector as vLLM 0.33 builds them for
`Llama4ForConditionalGeneration` (mllama4.py), per TP rank; the text side is
`kvcore.models.llama4`'s.

`Llama4VisionModel`: the patch embedding (a ColumnParallelLinear over channels x patch^2, no
bias), the class embedding and ((image_size / patch_size)^2 + 1) position rows, LayerNorms
before and after the encoder; each encoder layer two LayerNorms with biases, a biased
QKVParallelLinear and RowParallelLinear o_proj, a biased ColumnParallelLinear fc1 and
RowParallelLinear fc2; the pixel-shuffle adapter's fc1 (intermediate_size to
projector_input_dim) and fc2 (to projector_output_dim), column and row, biased where
``multi_modal_projector_bias``. `Llama4MultiModalProjector`: ``linear_1`` (vision_output_dim to
the text hidden size), column-parallel, no bias. All built without the quant_config (an fp8
checkpoint's tower stays in the model dtype). Under ``--mm-encoder-tp-mode data`` (supported)
the vision model is whole on every rank but the projector stays split. Buffers: the vision
RoPE's complex64 cache, (patches + 1) x head_dim / 2. Checked per rank against vLLM's classes
on the meta device (tests/data/weights_census/llava_towers/).
"""

from __future__ import annotations

from typing import Any

from kvcore.models.vision_keys import VisionParams, vision_config, vision_dim, vit_layer

# the classes whose tower and projector vLLM builds with quant_config None: a quantised
# checkpoint's tower is in the model dtype whatever its method (`kvcore.models.int_quant_rank`,
# `kvcore.models.modelopt_rank`); InternVL's (Hugging Face format) too: interns1_vit.py's
# InternS1VisionModel does not pass its quant_config to the encoder, and its projector takes
# none (census weights_census/quant_towers/: the tower unquantised under every method), and
# InternS1's remote-code checkpoints, which vLLM builds with the same class
TOWER_WITHOUT_QUANT_CONFIG = ("Llama4ForConditionalGeneration",
                              "InternVLForConditionalGeneration",
                              "InternS1ForConditionalGeneration",
                              # (Qwen2-Audio's encoder and projector; Phi-4-multimodal's NaViT,
                              # projection and audio embedding: census quant_towers3/)
                              "Qwen2AudioForConditionalGeneration", "Phi4MMForCausalLM",
                              # (Step3-VL's tower and projector: census quant_step3/)
                              "Step3VLForConditionalGeneration")
# transformers 5.20.2's Llama4VisionConfig defaults (Llama-4-Scout's and Maverick's
# checkpoints give hidden_size 1408, image_size 336, vision_output_dim 4096)
LLAMA4_VISION_DEFAULTS = {"hidden_size": 768, "intermediate_size": 5632,
                          "num_hidden_layers": 34, "num_attention_heads": 16,
                          "num_channels": 3, "image_size": 448, "patch_size": 14,
                          "vision_output_dim": 7680, "projector_input_dim": 4096,
                          "projector_output_dim": 4096}


def llama4_vision_params(cfg: dict[str, Any], text_hidden: int, source: str) -> VisionParams:
    v = vision_config(cfg, source)

    def dim(key: str) -> int:
        return vision_dim(v, LLAMA4_VISION_DEFAULTS, key, source)

    d, inter, p, heads = (dim("hidden_size"), dim("intermediate_size"), dim("patch_size"),
                          dim("num_attention_heads"))
    layers = dim("num_hidden_layers")
    positions = (dim("image_size") // p) ** 2 + 1
    pin, pout = dim("projector_input_dim"), dim("projector_output_dim")
    bias = bool(v.get("multi_modal_projector_bias", False))
    # class embedding, position rows, the two outer LayerNorms; a layer's two LayerNorms and
    # its row-parallel biases; the adapter's row-parallel bias
    layer_whole, layer_split = vit_layer(d, inter)
    whole = d + positions * d + 4 * d + layers * layer_whole + pout * bias
    split = (dim("num_channels") * p * p * d + layers * layer_split
             + inter * pin + pin * bias + pin * pout)
    projector = dim("vision_output_dim") * text_hidden
    return VisionParams(whole + split + projector, whole, heads, ("image",), True, (),
                        data_split=projector, buffers=8 * positions * (d // heads // 2))
