"""Write the census configs here (python make_tie_cases.py, in this folder): Cohere's text
classes (Command-R's CohereForCausalLM, Command R7B's Cohere2ForCausalLM, Cohere2MoeForCausalLM),
small (1,024 wide, 4 layers; Command-R also with Command R+'s ``use_qk_norm``), with
``tie_word_embeddings`` false, true and left out (the config classes' default: true)."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL = {"hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
         "head_dim": 128, "num_hidden_layers": 4, "intermediate_size": 2048,
         "vocab_size": 32000, "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
         "logit_scale": 0.0625, "layer_norm_eps": 1e-05, "rope_theta": 10000.0}
MODELS = {
    "cohere": {"architectures": ["CohereForCausalLM"], "model_type": "cohere",
               "use_qk_norm": False},
    # (Command R+'s q / k LayerNorms, a head's width each)
    "cohere-qk-norm": {"architectures": ["CohereForCausalLM"], "model_type": "cohere",
                       "use_qk_norm": True},
    "cohere2": {"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2",
                "sliding_window": 4096, "sliding_window_pattern": 4},
    "cohere2-moe": {"architectures": ["Cohere2MoeForCausalLM"], "model_type": "cohere2_moe",
                    "sliding_window": 4096, "sliding_window_pattern": 4, "num_experts": 4,
                    "num_experts_per_tok": 2},
}

if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, cfg in MODELS.items():
        for tie in (False, True, None):
            out = {**cfg, **SMALL}
            if tie is not None:
                out["tie_word_embeddings"] = tie
            suffix = {False: "untied", True: "tied", None: "tie-absent"}[tie]
            (HERE / f"{name}-{suffix}.config.json").write_text(json.dumps(out, indent=1) + "\n")
