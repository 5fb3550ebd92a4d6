"""Each *.params.json here (a Mistral-format checkpoint's) -> the *.config.json kvcli reads:
vLLM 0.33's adapt_config_dict keys (transformers_utils/configs/mistral.py), written by hand for
the dense text model and the vision encoder (max_position_embeddings absent: 128,000, as vLLM
defaults it without an HF config.json). Run from this folder:

    python3 write_configs.py *.params.json
"""
# ruff: noqa
import json, sys

# Mistral key -> Hugging Face key
REN = {"dim": "hidden_size", "norm_eps": "rms_norm_eps", "n_kv_heads": "num_key_value_heads",
       "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
       "hidden_dim": "intermediate_size", "tied_embeddings": "tie_word_embeddings"}
for f in sys.argv[1:]:
    d = json.load(open(f))
    v = d.pop("vision_encoder")
    t = {REN.get(k, k): x for k, x in d.items()}
    t.setdefault("max_position_embeddings", 128000)
    t = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", **t}
    out = {"architectures": ["PixtralForConditionalGeneration"], "model_type": "pixtral",
           "text_config": t, "vision_config": v}
    json.dump(out, open(f.replace(".params.json", ".config.json"), "w"), indent=1)
