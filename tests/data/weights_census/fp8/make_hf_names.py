"""Write the `-hf-names` configs: an fp8 census config's ignore list in the checkpoint's spelling
(the names before vLLM's hf_to_vllm_mapper renames them), and Qwen3.5's multimodal config.

A development tool, never run by the tests. From this folder: `python make_hf_names.py`.
"""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(name):
    return json.loads((HERE / f"{name}.config.json").read_text())


def write(name, cfg):
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")


def renamed(cfg, key, fn):
    q = cfg["quantization_config"]
    q[key] = [fn(n) for n in q[key]] + q.pop("_extra", [])
    return cfg


# Qwen3.5 text: the checkpoint's model.language_model.layers.N (vLLM: model.layers.N), and an
# MTP layer's linear (mtp., which the renames keep: it names nothing vLLM builds)
qt = load("qwen3-5-text-fp8-skip-mlp-head-gdn")
qt["quantization_config"]["_extra"] = ["mtp.layers.0.mlp.gate_proj"]
write("qwen3-5-text-fp8-skip-hf-names", renamed(
    qt, "ignored_layers", lambda n: n.replace("model.", "model.language_model.", 1)))

# Qwen3.5 multimodal: the text model above under text_config, a vision tower of whole 128-blocks
base = load("qwen3-5-text-fp8")
text = {k: v for k, v in base.items() if k not in ("architectures", "quantization_config")}
mm = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
      "text_config": text,
      "vision_config": {"depth": 2, "hidden_size": 512, "intermediate_size": 512,
                        "num_heads": 4, "out_hidden_size": 1024, "patch_size": 16,
                        "spatial_merge_size": 2, "temporal_patch_size": 2,
                        "num_position_embeddings": 64, "in_channels": 3,
                        "model_type": "qwen3_5_vision"},
      "torch_dtype": "bfloat16", "quantization_config": base["quantization_config"]}
write("qwen3-5-vl-fp8", mm)
mmq = json.loads(json.dumps(mm))
mmq["quantization_config"]["ignored_layers"] = qt["quantization_config"]["ignored_layers"]
write("qwen3-5-vl-fp8-skip-hf-names", mmq)
# ... and the names as the text model's vLLM paths (model.layers.N): vLLM's multimodal class
# holds its language model at language_model.model.layers.N, so they name nothing there
mmv = json.loads(json.dumps(mm))
mmv["quantization_config"]["ignored_layers"] = load(
    "qwen3-5-text-fp8-skip-mlp-head-gdn")["quantization_config"]["ignored_layers"]
write("qwen3-5-vl-fp8-skip-vllm-names", mmv)

# Gemma 3 multimodal (tiny, whole 128-blocks): model.language_model.layers.N (vLLM:
# language_model.model.layers.N), and the same list as vLLM's text paths
fp8q = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
        "weight_block_size": [128, 128]}
gm = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
      "boi_token_index": 255999, "eoi_token_index": 256000, "image_token_index": 1000,
      "mm_tokens_per_image": 16, "torch_dtype": "bfloat16",
      "text_config": {"head_dim": 128, "hidden_size": 1024, "intermediate_size": 1024,
                      "model_type": "gemma3_text", "num_attention_heads": 8,
                      "num_hidden_layers": 2, "num_key_value_heads": 4,
                      "query_pre_attn_scalar": 128, "sliding_window": 512, "vocab_size": 1024,
                      "max_position_embeddings": 4096},
      "vision_config": {"hidden_size": 512, "image_size": 224, "intermediate_size": 512,
                        "model_type": "siglip_vision_model", "num_attention_heads": 4,
                        "num_hidden_layers": 2, "patch_size": 14, "vision_use_head": False},
      "quantization_config": fp8q}
write("gemma-3-mm-fp8", gm)
gl = [f"model.language_model.layers.1.{m}" for m in (
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.down_proj")]
for name, names in (("gemma-3-mm-fp8-skip-hf-names", gl),
                    ("gemma-3-mm-fp8-skip-vllm-names",
                     [n.replace("model.language_model.", "model.") for n in gl])):
    c = json.loads(json.dumps(gm))
    c["quantization_config"] = {**fp8q, "ignored_layers": names}
    write(name, c)

# Nemotron-H: the checkpoint's backbone.layers.N (vLLM: model.layers.N)
write("nemotron-h-fp8-skip-hf-names", renamed(
    load("nemotron-h-fp8-skip"), "ignored_layers", lambda n: n.replace("model.", "backbone.", 1)))

# Jamba: the checkpoint's attention under self_attn (vLLM: on the layer itself)
write("jamba-fp8-skip-hf-names", renamed(
    load("jamba-fp8-skip"), "ignored_layers",
    lambda n: n.replace(".4.", ".4.self_attn.") if n.startswith("model.layers.4.") else n))
