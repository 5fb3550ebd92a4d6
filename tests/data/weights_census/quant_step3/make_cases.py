"""Write the census configs here (python make_cases.py, in this folder): Step3-VL (the published
stepfun-ai/step3-fp8's class) and Step3's text model under ../quant_towers/make_cases.py's
quantisation methods, on ../mm_step3's tiny-step3 widened so that groups and blocks of 128
divide its linears at TP 1 (text 512 wide, 8 heads of 64, share_q_dim 256, 8 experts and the
shared expert 256 wide, dense MLP 1,024; MoE layers 1 and 3 of 4); and the published
stepfun-ai/step3-fp8 (``step3-fp8``); Step-3.5 (``tiny-step3p5``: `step3p5`)."""
# ruff: noqa
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("qt_cases", HERE.parent / "quant_towers" /
                                               "make_cases.py")
qt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qt)

TEXT = {"hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8,
        "head_dim": 64, "share_q_dim": 256, "moe_intermediate_size": 256,
        "moe_num_experts": 8, "share_expert_dim": 256}
KEEP = ("fp8", "fp8-block", "ct-fp8", "ct-w4a16", "awq", "gptq")


def bases():
    vl = qt.read("mm_step3/tiny-step3.config.json")
    vl["text_config"] = {**vl["text_config"], **TEXT}
    vl["hidden_size"] = TEXT["hidden_size"]
    text = dict(vl["text_config"])
    return {"tiny-step3": (vl, ["vision_model", "vit_downsampler", "vit_large_projector"]),
            "tiny-step3-text": (text, []), "tiny-step3p5": (step3p5(), [])}


def step3p5():
    """../mm_step3/step3p5's step3p5-swa cut to 4 layers (full, sliding, sliding, full; MoE in
    1 and 3), 512 wide: 8 query heads on full layers, 16 on sliding ones, 2 KV heads of 64,
    the head-wise gate; 8 experts and the shared expert 256 wide, dense MLP 1,024."""
    cfg = qt.read("mm_step3/step3p5/step3p5-swa.config.json")
    return {**cfg, "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_sliding_attention_heads": 16,
            "num_key_value_heads": 2, "head_dim": 64, "query_pre_attn_scalar": 64,
            "n_routed_experts": 8, "moe_num_experts": 8, "moe_top_k": 2,
            "num_experts_per_tok": 2, "moe_intermediate_size": 256, "share_expert_dim": 256,
            "vocab_size": 1024, "max_position_embeddings": 4096,
            "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                            "full_attention"],
            "mlp_layer_types": ["dense", "sparse", "dense", "sparse"]}


def published():
    """stepfun-ai/step3-fp8 as its model card gives its quantization_config (fp8, dynamic
    activations, e4m3, blocks of 128 x 128), on ../mm_step3's step3."""
    cfg = qt.read("mm_step3/step3.config.json")
    return {**cfg, "quantization_config": {**qt.BLOCK, "fmt": "e4m3"}}


def main():
    for base, (cfg, names) in bases().items():
        ignore = ["re:.*lm_head", *(f"re:.*{n}.*" for n in names)]
        for method, q in qt.methods(names, ignore).items():
            if method in KEEP:
                out = {**cfg, "quantization_config": q}
                (HERE / f"{base}-{method}.config.json").write_text(
                    json.dumps(out, indent=1) + "\n")
    (HERE / "step3-fp8.config.json").write_text(json.dumps(published(), indent=1) + "\n")


if __name__ == "__main__":
    main()
