# ruff: noqa
"""Write this folder's configs: ../quant_towers/'s tiny LLaVA (CLIP) and Mistral 3 fp8 configs
with an ``ignored_layers`` list naming their language model's linears in the checkpoint's
names (``model.language_model.layers.N``, transformers >= 4.52), in vLLM's
(``language_model.model.layers.N``) and bare (``model.layers.N``). A development tool."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "quant_towers"
QKV = ("self_attn.q_proj", "self_attn.k_proj")     # two of a fused linear's three shards
CASES = {
    "tiny-llava-clip-fp8-skip-half-qkv-hf-names": ("tiny-llava-clip-fp8",
                                                    "model.language_model.layers.0.", QKV),
    "tiny-llava-clip-fp8-skip-half-qkv-vllm-names": ("tiny-llava-clip-fp8",
                                                      "language_model.model.layers.0.", QKV),
    "tiny-llava-clip-fp8-skip-half-qkv-bare-names": ("tiny-llava-clip-fp8", "model.layers.0.",
                                                      QKV),
    "tiny-llava-clip-fp8-skip-mlp-hf-names": ("tiny-llava-clip-fp8",
                                               "model.language_model.layers.1.",
                                               ("mlp.down_proj",)),
    "tiny-mistral3-fp8-skip-half-qkv-bare-names": ("tiny-mistral3-fp8", "model.layers.0.", QKV),
    "tiny-mistral3-fp8-skip-mlp-hf-names": ("tiny-mistral3-fp8",
                                            "model.language_model.layers.1.",
                                            ("mlp.down_proj",)),
}
for name, (base, head, linears) in CASES.items():
    cfg = json.loads((SRC / f"{base}.config.json").read_text())
    cfg["quantization_config"]["ignored_layers"] = [head + x for x in linears]
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
