"""Write the census configs here (python make_longcat_cases.py, in this folder): LongCat-Flash
(LongcatFlashConfig's defaults, the published checkpoint's shapes, with the keys vLLM's model
reads and the class lacks: mla_scale_q_lora, mla_scale_kv_lora, zero_expert_type) cut to 2
decoder layers; the same by num_hidden_layers (4: the class's 2 x num_layers) with a tied
head and other expert counts; one without zero_expert_type (vLLM refuses it)."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = {"architectures": ["LongcatFlashForCausalLM"], "model_type": "longcat_flash",
        # (kv_lora_rank given, as the published config does: ../record_census.py picks the
        # MLA backend by it)
        "num_layers": 2, "kv_lora_rank": 512, "mla_scale_q_lora": True, "mla_scale_kv_lora": True,
        "zero_expert_type": "identity", "torch_dtype": "bfloat16"}


def cases():
    other = {k: v for k, v in BASE.items() if k != "num_layers"}
    return {
        "longcat-flash-l2": BASE,
        "longcat-flash-other": {**other, "num_hidden_layers": 4, "tie_word_embeddings": True,
                                "n_routed_experts": 64, "zero_expert_num": 32,
                                "expert_ffn_hidden_size": 1024, "ffn_hidden_size": 4096,
                                "hidden_size": 2048, "num_attention_heads": 16,
                                "vocab_size": 32000, "max_position_embeddings": 8192},
        "longcat-flash-no-zero-type": {k: v for k, v in BASE.items()
                                       if k != "zero_expert_type"},
    }


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, cfg in cases().items():
        (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
