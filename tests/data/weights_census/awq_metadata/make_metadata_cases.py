"""Write the census cases here (python make_metadata_cases.py, in this folder): a small Llama
(1,024 wide, 2 layers) under AWQ and GPTQ, 4 bits in groups of 128, with and without a
checkpoint beside its config.json whose safetensors store layer 1's mlp.down_proj unquantised
(a float16 ``weight``, no qweight) while config.json names no module to skip; and the same
module named in config.json instead. ``<case>.header.json``: the safetensors header
record_metadata.py writes as the checkpoint (tensor names, dtypes, shapes; no data)."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
H, I, V, LAYERS = 1024, 2816, 32000, 2
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
         "intermediate_size": I, "num_hidden_layers": LAYERS, "num_attention_heads": 8,
         "num_key_value_heads": 8, "vocab_size": V, "max_position_embeddings": 4096,
         "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "float16"}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
       "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False,
        "sym": True}
LINEARS = {"self_attn.q_proj": (H, H), "self_attn.k_proj": (H, H), "self_attn.v_proj": (H, H),
           "self_attn.o_proj": (H, H), "mlp.gate_proj": (H, I), "mlp.up_proj": (H, I),
           "mlp.down_proj": (I, H)}
PLAIN = "model.layers.1.mlp.down_proj"


def header(method):
    """The checkpoint's tensors: every linear packed (AWQ: qweight [in, out / 8], qzeros,
    scales; GPTQ: qweight [in / 8, out], qzeros, scales, g_idx) but PLAIN, a float16 weight."""
    out = {"model.embed_tokens.weight": ("F16", [V, H]), "model.norm.weight": ("F16", [H]),
           "lm_head.weight": ("F16", [V, H])}
    for i in range(LAYERS):
        out[f"model.layers.{i}.input_layernorm.weight"] = ("F16", [H])
        out[f"model.layers.{i}.post_attention_layernorm.weight"] = ("F16", [H])
        for name, (k, n) in LINEARS.items():
            p = f"model.layers.{i}.{name}"
            if p == PLAIN:
                out[p + ".weight"] = ("F16", [n, k])
            elif method == "awq":
                out.update({p + ".qweight": ("I32", [k, n // 8]),
                            p + ".qzeros": ("I32", [k // 128, n // 8]),
                            p + ".scales": ("F16", [k // 128, n])})
            else:
                out.update({p + ".qweight": ("I32", [k // 8, n]),
                            p + ".qzeros": ("I32", [k // 128, n // 8]),
                            p + ".scales": ("F16", [k // 128, n]),
                            p + ".g_idx": ("I32", [k])})
    return {name: {"dtype": d, "shape": s} for name, (d, s) in out.items()}


if __name__ == "__main__":
    for f in (*HERE.glob("*.config.json"), *HERE.glob("*.header.json")):
        f.unlink()
    cases = {
        "llama-awq": (AWQ, False), "llama-awq-plain-in-checkpoint": (AWQ, True),
        "llama-awq-plain-listed": ({**AWQ, "modules_to_not_convert": [PLAIN]}, False),
        "llama-gptq": (GPTQ, False), "llama-gptq-plain-in-checkpoint": (GPTQ, True),
    }
    for name, (q, checkpoint) in cases.items():
        (HERE / f"{name}.config.json").write_text(
            json.dumps({**LLAMA, "quantization_config": q}, indent=1) + "\n")
        if checkpoint:
            (HERE / f"{name}.header.json").write_text(
                json.dumps(header(q["quant_method"]), indent=1) + "\n")
