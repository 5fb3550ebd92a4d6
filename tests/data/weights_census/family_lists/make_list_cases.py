"""Write the census configs here (python make_list_cases.py, in this folder): ../families'
LFM2 and LFM2-MoE (and DBRX, the pre-Llama decoders) under fp8, AWQ, GPTQ, compressed-tensors
and ModelOpt with lists naming their own modules, by the checkpoint's names and by vLLM's:
whole fused linears, half of one, the short convolution, the routed experts, the router."""
# ruff: noqa
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "families"))
from make_family_cases import AWQ, FAMILIES, FP8, GPTQ, W4A16, ct, modelopt

BLOCK = {**FP8, "weight_block_size": [128, 128]}


def lfm2_lists(moe):
    """LFM2 (layers conv, attention, conv, conv) or LFM2-MoE (conv, attention, conv,
    attention; layer 0 dense): lists by the checkpoint's names (conv, w1 / w3) and vLLM's."""
    out = {
        # (the checkpoint's conv: vLLM's mapper renames it short_conv for fp8 and AWQ)
        "fp8-skip-conv-hf": {**FP8, "ignored_layers": [
            "model.layers.0.conv.in_proj", "model.layers.2.conv.out_proj"]},
        "fp8-skip-conv-vllm": {**BLOCK, "ignored_layers": [
            "model.layers.0.short_conv.in_proj", "model.layers.2.short_conv.out_proj"]},
        "fp8-skip-w13": {**FP8, "ignored_layers": [
            "model.layers.0.feed_forward.w1", "model.layers.0.feed_forward.w3",
            "model.layers.2.feed_forward.w13"]},
        "fp8-skip-half-w13": {**FP8, "ignored_layers": ["model.layers.0.feed_forward.w1"]},
        "awq-skip-conv": {**AWQ, "modules_to_not_convert": ["conv.in_proj", "feed_forward.w2"]},
        "awq-skip-layer": {**AWQ, "modules_to_not_convert": ["model.layers.2."]},
        "gptq-dynamic-conv": {**GPTQ, "dynamic": {"-:.*short_conv[.]in_proj$": {},
                                                  "-:.*layers[.]0[.]feed_forward.*": {}}},
        "gptq-dynamic-bits": {**GPTQ, "dynamic": {r"+:.*feed_forward[.]w2$": {"bits": 8}}},
        # (compressed-tensors renames the checkpoint's conv too: its apply_vllm_mapper)
        "ct-w4a16-ignore-conv-hf": ct("pack-quantized", W4A16, ignore=(
            "lm_head", "model.layers.0.conv.in_proj")),
        "ct-w4a16-ignore-conv-vllm": ct("pack-quantized", W4A16, ignore=(
            "lm_head", "re:.*short_conv[.]in_proj$", "model.layers.2.feed_forward.w2")),
        "modelopt-fp8-skip-conv": modelopt("FP8", ("lm_head", "*short_conv*",
                                                   "model.layers.0.feed_forward.w2")),
    }
    if moe:
        out["fp8-skip-experts"] = {**FP8, "ignored_layers": [
            "model.layers.2.feed_forward.experts", "model.layers.3.feed_forward.gate"]}
        out["awq-skip-experts"] = {**AWQ, "modules_to_not_convert": ["feed_forward.gate",
                                                                     "layers.3.feed_forward"]}
        out["ct-w4a16-ignore-gate"] = ct("pack-quantized", W4A16, ignore=(
            "lm_head", "re:.*feed_forward[.]gate$"))
        out["modelopt-fp8-skip-experts"] = modelopt("FP8", ("lm_head",
                                                            "model.layers.2.feed_forward*"))
    return out


# (DBRX, 2 blocks of 4 experts: its attention at transformer.blocks.N.norm_attn_norm.attn,
# Wqkv and out_proj; its experts' FusedMoE prefix transformer.blocks.N.ffn)
DBRX_LISTS = {
    "fp8-skip-wqkv": {**BLOCK, "ignored_layers": [
        "transformer.blocks.0.norm_attn_norm.attn.Wqkv",
        "transformer.blocks.1.norm_attn_norm.attn.out_proj"]},
    "fp8-skip-experts": {**FP8, "ignored_layers": ["transformer.blocks.1.ffn",
                                                   "transformer.blocks.0.ffn.experts"]},
    "awq-skip-wqkv": {**AWQ, "modules_to_not_convert": ["Wqkv"]},
    "awq-skip-ffn": {**AWQ, "modules_to_not_convert": ["blocks.0.ffn"]},
    "gptq-dynamic-out": {**GPTQ, "dynamic": {"-:.*attn[.]out_proj$": {},
                                             "+:.*blocks[.]1[.].*": {"bits": 8}}},
    "modelopt-fp8-skip-attn": modelopt("FP8", ("lm_head", "*norm_attn_norm*")),
    "modelopt-fp8-skip-ffn": modelopt("FP8", ("lm_head", "transformer.blocks.1.ffn*")),
}


# (the pre-Llama decoders vLLM serves with its own files, 2 layers, fp8: lists by vLLM's paths
# and the checkpoint's, fused shards named one by one)
CLASSIC_LISTS = {
    "gpt2": ["transformer.h.1.attn.c_proj", "transformer.h.0.mlp.c_fc"],
    "gpt-j": ["transformer.h.0.attn.q_proj", "transformer.h.0.attn.k_proj",
              "transformer.h.0.attn.v_proj", "transformer.h.1.mlp.fc_in"],
    "bloom": ["transformer.h.1.self_attention.query_key_value",
              "transformer.h.0.mlp.dense_h_to_4h"],
    "opt": ["decoder.layers.0.self_attn.q_proj", "decoder.layers.0.self_attn.k_proj",
            "decoder.layers.0.self_attn.v_proj", "model.decoder.layers.1.fc1",
            "model.decoder.project_in"],
    "opt-half-qkv": ["model.decoder.layers.0.self_attn.q_proj"],
    "falcon": ["transformer.h.1.self_attention.query_key_value",
               "transformer.h.0.mlp.dense_h_to_4h"],
    "chatglm": ["transformer.encoder.layers.0.self_attention.query_key_value",
                "transformer.encoder.layers.1.mlp.dense_h_to_4h"],
    # (the Transformers backend's: by the checkpoint's base-model prefix, by none, by vLLM's
    # model.; Phi's q/k/v_proj fused into qkv_proj by the backend's fuser)
    "gpt-neox": ["gpt_neox.layers.0.attention.dense", "layers.1.mlp.dense_h_to_4h",
                 "model.layers.1.attention.query_key_value"],
    "phi": ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
            "model.layers.0.self_attn.v_proj", "layers.1.mlp.fc1",
            "model.layers.1.self_attn.dense"],
    "phi-half-qkv": ["model.layers.1.self_attn.k_proj"],
    "starcoder": ["transformer.h.0.attn.c_attn", "h.1.mlp.c_proj", "model.h.1.attn.c_proj"],
}


def cases():
    out = {}
    for fam, names in CLASSIC_LISTS.items():
        base = FAMILIES[fam.removesuffix("-half-qkv")][0]
        out[f"{fam}-fp8-skip-own"] = {**base, "torch_dtype": "bfloat16",
                                      "quantization_config": {**FP8, "ignored_layers": names}}
    # (StableLM 2 1.6B, 2 layers: its q/k/v and gate/up shards by the checkpoint's names)
    stablelm = json.loads((HERE.parents[1] / "gpt_family" / "stablelm-2-1_6b.config.json")
                          .read_text())
    out["stablelm-fp8-skip-own"] = {**stablelm, "num_hidden_layers": 2,
                                    "torch_dtype": "bfloat16", "quantization_config": {
        **FP8, "ignored_layers": [f"model.layers.0.self_attn.{x}_proj" for x in "qkv"]
        + ["model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj",
           "model.layers.1.self_attn.o_proj"]}}
    # (StarCoder2-3B, 2 layers, the Transformers backend's: q/k/v_proj fused into qkv_proj,
    # an unprefixed c_fc; one of the three alone)
    sc2 = json.loads((HERE.parents[1] / "gpt_family" / "starcoder2-3b.config.json").read_text())
    for name, names in (("starcoder2", [f"model.layers.0.self_attn.{x}_proj" for x in "qkv"]
                         + ["layers.1.mlp.c_fc", "model.layers.1.self_attn.o_proj"]),
                        ("starcoder2-half-qkv", ["model.layers.0.self_attn.v_proj"])):
        out[f"{name}-fp8-skip-own"] = {**sc2, "num_hidden_layers": 2, "quantization_config": {
            **FP8, "ignored_layers": names}}
    for m, q in DBRX_LISTS.items():
        dtype = "float16" if m.startswith(("awq", "gptq")) else "bfloat16"
        out[f"dbrx-{m}"] = {**FAMILIES["dbrx"][0], "torch_dtype": dtype,
                            "quantization_config": q}
    for fam in ("lfm2", "lfm2-moe"):
        cfg = FAMILIES[fam][0]
        for m, q in lfm2_lists(fam == "lfm2-moe").items():
            dtype = "float16" if m.startswith(("awq", "gptq")) else "bfloat16"
            out[f"{fam}-{m}"] = {**cfg, "torch_dtype": dtype, "quantization_config": q}
    return out


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, cfg in cases().items():
        out = dict(cfg)
        out.pop("dtype", None)
        (HERE / f"{name}.config.json").write_text(json.dumps(out, indent=1) + "\n")
