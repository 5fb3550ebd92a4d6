"""Write the census configs here (python make_dtype_cases.py, in this folder): a small LLaVA-1.5
(2 text and 2 vision layers) whose wrapper, text_config and vision_config name different dtypes
under ``torch_dtype`` and ``dtype``, and a small Llama naming both keys."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEXT = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
        "vocab_size": 32064, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
        "tie_word_embeddings": False}
VISION = {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
          "num_hidden_layers": 2, "num_attention_heads": 16, "image_size": 336,
          "patch_size": 14, "projection_dim": 768, "hidden_act": "quick_gelu"}
LLAVA = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
         "image_token_index": 32000, "projector_hidden_act": "gelu",
         "vision_feature_layer": -2, "vision_feature_select_strategy": "default"}
# name: (the wrapper's keys, the text config's, the vision config's)
CASES = {
    "wrapper-f16-text-bf16": ({"torch_dtype": "float16"}, {"torch_dtype": "bfloat16"}, {}),
    "wrapper-none-text-f16": ({}, {"torch_dtype": "float16"}, {}),
    "wrapper-f32-text-f16": ({"torch_dtype": "float32"}, {"torch_dtype": "float16"}, {}),
    "wrapper-bf16-text-f32": ({"torch_dtype": "bfloat16"}, {"torch_dtype": "float32"}, {}),
    "wrapper-dtype-bf16-torch-f16": ({"dtype": "bfloat16", "torch_dtype": "float16"}, {}, {}),
    "wrapper-none-text-dtype-f16-torch-bf16": (
        {}, {"dtype": "float16", "torch_dtype": "bfloat16"}, {}),
    "vision-only-f16": ({}, {}, {"torch_dtype": "float16"}),
    "none": ({}, {}, {}),
}

if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, (w, t, v) in CASES.items():
        cfg = {**LLAVA, **w, "text_config": {**TEXT, **t}, "vision_config": {**VISION, **v}}
        (HERE / f"llava-{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    llama = {"architectures": ["LlamaForCausalLM"], **TEXT, "dtype": "float16",
             "torch_dtype": "bfloat16"}
    (HERE / "llama-dtype-f16-torch-bf16.config.json").write_text(json.dumps(llama, indent=1)
                                                                  + "\n")
