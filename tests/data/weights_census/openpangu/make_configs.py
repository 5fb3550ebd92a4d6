# ruff: noqa
"""Write the config.json files here. From the project root:

    python tests/data/weights_census/openpangu/make_configs.py
"""
import os; os.chdir(os.path.dirname(os.path.abspath(__file__)))
import json
# openPangu Ultra MoE 718B (FreedomIntelligence / openPangu-Ultra-MoE-718B) as known, not
# downloaded: DeepSeek-V3's MLA shapes, 61 layers (3 dense), 256 routed experts and a shared one,
# 7,680 wide, sandwich norms, the router's expert bias
ULTRA = {"architectures": ["PanguUltraMoEForCausalLM"], "model_type": "pangu_ultra_moe",
         "_name_or_path": "openPangu-Ultra-MoE-718B", "hidden_size": 7680,
         "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
         "num_attention_heads": 128, "num_key_value_heads": 128, "first_k_dense_replace": 3,
         "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
         "norm_topk_prob": True, "routed_scaling_factor": 2.5, "kv_lora_rank": 512,
         "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
         "v_head_dim": 128, "vocab_size": 153600, "max_position_embeddings": 131072,
         "rope_theta": 25600000, "rms_norm_eps": 1e-05, "hidden_act": "silu",
         "sandwich_norm": True, "router_enable_expert_bias": True,
         "num_nextn_predict_layers": 1, "attention_bias": False, "tie_word_embeddings": False,
         "torch_dtype": "bfloat16", "bos_token_id": 0, "eos_token_id": 1}
# tiny: ../../mtp_draft/2-tiny-deepseek-v3's shapes; with and without each flag
TINY = dict(ULTRA, _name_or_path="tiny-pangu-ultra-moe", hidden_size=64, intermediate_size=128,
            moe_intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=4, first_k_dense_replace=1, n_routed_experts=4,
            num_experts_per_tok=2, kv_lora_rank=32, q_lora_rank=48, qk_nope_head_dim=16,
            qk_rope_head_dim=8, v_head_dim=16, vocab_size=32000, max_position_embeddings=65536,
            torch_dtype="float16")
def write(name, cfg):
    open(f"{name}.config.json", "w").write(json.dumps(cfg, indent=1) + "\n")
write("openpangu-ultra-moe-718b", ULTRA)
write("tiny-pangu-ultra-moe", TINY)
write("tiny-pangu-ultra-moe-plain", dict(TINY, _name_or_path="tiny-pangu-ultra-moe-plain",
                                         sandwich_norm=False, router_enable_expert_bias=False))
write("tiny-pangu-ultra-moe-no-q-lora", dict(TINY, _name_or_path="tiny-pangu-ultra-moe-no-q-lora",
                                             q_lora_rank=None))
# a rope scaling vLLM's OpenPanguMLAAttention ignores (deepseek_yarn, factor 1, always)
write("tiny-pangu-ultra-moe-yarn", dict(TINY, _name_or_path="tiny-pangu-ultra-moe-yarn",
      rope_scaling={"type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096,
                    "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}))
# moe_layer_freq, which openpangu.py never reads: every layer from first_k_dense_replace on is
# MoE (5 layers, 1 dense)
TINY5 = dict(TINY, num_hidden_layers=5)
write("tiny-pangu-ultra-moe-layer-freq",
      dict(TINY5, _name_or_path="tiny-pangu-ultra-moe-layer-freq", moe_layer_freq=2))
