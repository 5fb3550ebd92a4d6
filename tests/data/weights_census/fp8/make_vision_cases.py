"""Write the fp8 vision-tower configs: the tiny multimodal configs (`qwen3-5-vl-fp8`,
`gemma-3-mm-fp8`, written by make_hf_names.py) varied where vLLM quantises, refuses or skips
a vision tower's linears.

A development tool, never run by the tests. From this folder: `python make_vision_cases.py`.
"""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(name):
    return json.loads((HERE / f"{name}.config.json").read_text())


def write(name, cfg):
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")


def varied(name, vision=None, ignored=None):
    c = load(name)
    c["vision_config"].update(vision or {})
    if ignored is not None:
        c["quantization_config"]["ignored_layers"] = ignored
    return c


# Qwen3.5-MoE multimodal: the dense config's text model made MoE (4 experts 256 wide, a shared
# expert as wide: whole 128-blocks at TP 1, 2; vLLM's finer 64-block at TP 4)
moe = load("qwen3-5-vl-fp8")
moe["architectures"] = ["Qwen3_5MoeForConditionalGeneration"]
moe["model_type"] = "qwen3_5_moe"
t = moe["text_config"]
t.pop("intermediate_size")
t.update({"model_type": "qwen3_5_moe_text", "moe_intermediate_size": 256,
          "shared_expert_intermediate_size": 256, "num_experts": 4, "num_experts_per_tok": 2})
moe["vision_config"]["model_type"] = "qwen3_5_moe_vision"
write("qwen3-5-moe-vl-fp8", moe)

# block-shape refusals: Qwen3.5's vision MLP 640 wide (linear_fc1's column shard 320 at TP 2);
# SigLIP 384 wide (out_proj's row shard 192 at TP 2)
write("qwen3-5-vl-fp8-narrow", varied("qwen3-5-vl-fp8", {"intermediate_size": 640}))
write("gemma-3-mm-fp8-narrow", varied("gemma-3-mm-fp8", {"hidden_size": 384}))
# SigLIP's MLP 560 wide, not a multiple of 64: vLLM builds fc1/fc2 without the quant_config
write("gemma-3-mm-fp8-mlp-odd", varied("gemma-3-mm-fp8", {"intermediate_size": 560}))

# ignore lists naming vision linears, in the checkpoint's spelling (model.visual.,
# model.vision_tower.) and in vLLM's
write("qwen3-5-vl-fp8-skip-vision", varied("qwen3-5-vl-fp8", ignored=[
    "model.visual.blocks.0.attn.qkv", "model.visual.blocks.1.attn.proj",
    "model.visual.merger.linear_fc1", "visual.blocks.1.mlp.linear_fc2",
    "model.visual.blocks.0.mlp"]))
siglip = "model.vision_tower.vision_model.encoder.layers"
write("gemma-3-mm-fp8-skip-vision", varied("gemma-3-mm-fp8", ignored=[
    f"{siglip}.0.self_attn.q_proj", f"{siglip}.0.self_attn.k_proj",
    f"{siglip}.0.self_attn.v_proj", f"{siglip}.1.mlp.fc1",
    "vision_tower.vision_model.encoder.layers.1.self_attn.out_proj",
    "model.multi_modal_projector.mm_input_projection_weight"]))
# part of a fused linear named, as the checkpoint writes it: refused at every TP
write("gemma-3-mm-fp8-skip-half-vision-qkv", varied("gemma-3-mm-fp8", ignored=[
    f"{siglip}.0.self_attn.q_proj", f"{siglip}.0.self_attn.k_proj"]))
half = load("qwen3-5-text-fp8-skip-half-qkv")
q = half["quantization_config"]
q["ignored_layers"] = [n.replace("model.", "model.language_model.", 1)
                       for n in q["ignored_layers"]]
write("qwen3-5-text-fp8-skip-half-qkv-hf-names", half)
# ... and in the multimodal class (vLLM's path: language_model.model.layers.3...)
write("qwen3-5-vl-fp8-skip-half-qkv-hf-names", varied("qwen3-5-vl-fp8", ignored=q["ignored_layers"]))

# another quantisation: MXFP4 (Mxfp4Config quantises the routed experts only; every linear,
# the tower's included, falls back to UnquantizedLinearMethod). (Qwen3.5-MoE's experts under
# it found no MXFP4 MoE backend on the census's CPU, at every TP: not kept)
c = load("gemma-3-mm-fp8")
c["quantization_config"] = {"quant_method": "mxfp4"}
write("gemma-3-mm-mxfp4", c)
