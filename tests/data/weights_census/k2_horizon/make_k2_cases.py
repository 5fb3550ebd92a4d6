"""Write the census configs here (python make_k2_cases.py, in this folder): a K2-Horizon text
model (`k2_horizon`, a Qwen3-30B-A3B-shaped MoE with one shared expert and a router bias, 4
layers) under ../quant2's methods and router lists; and in bf16 with each feature kvcli does
not model (MoVA attention, gated attention, grouped q/k norms, attention biases, a dense
layer), which kvcli refuses by name."""
# ruff: noqa
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "quant2"))
from make_quant2_cases import TEXT, router_methods

# (K2HorizonConfig's keys; no class default exists here: every key k2_horizon.py reads given)
K2 = {**{k: v for k, v in TEXT.items() if k not in ("model_type", "architectures")},
      "model_type": "k2_horizon", "architectures": ["K2HorizonForCausalLM"],
      "num_shared_experts": 1, "moe_gate_bias": True, "router_score_func": "sigmoid",
      "router_scaling_factor": 1.0, "layernorm_num_groups": 1, "rope_head_dim": 64,
      "query_key_norm": False, "attention_gate_func": None, "mova_num_experts": 0,
      "mova_num_experts_per_tok": 0, "decoder_sparse_step": 1, "mlp_only_layers": [],
      "attention_bias": False, "torch_dtype": "bfloat16"}
FEATURES = {
    "mova": {"mova_num_experts": 4, "mova_num_experts_per_tok": 2},
    "gated-attn": {"attention_gate_func": "silu"},
    "qk-norm": {"query_key_norm": True},
    "attn-bias": {"attention_bias": True},
    "dense-layer": {"mlp_only_layers": [0]},
    "no-gate-bias": {"moe_gate_bias": False},
}


def cases():
    out = {"k2-horizon": dict(K2)}
    for m, q in router_methods("model.layers", "model.layers", 4).items():
        out[f"k2-horizon-{m}"] = {**K2, "quantization_config": q}
    for f, keys in FEATURES.items():
        out[f"k2-horizon-{f}"] = {**K2, **keys}
    return out


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, cfg in cases().items():
        (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
