# ruff: noqa
"""Write the config.json files here (published checkpoints' values as known, not downloaded;
synthetic tiny ones). From the project root:

    python tests/data/weights_census/internvl_chat/make_configs.py
"""
import os; os.chdir(os.path.dirname(os.path.abspath(__file__)))
import json
VIT300 = {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b",
          "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
          "num_attention_heads": 16, "image_size": 448, "patch_size": 14, "num_channels": 3,
          "qkv_bias": True, "qk_normalization": False, "norm_type": "layer_norm",
          "layer_norm_eps": 1e-06, "hidden_act": "gelu", "initializer_factor": 0.1,
          "drop_path_rate": 0.1, "use_flash_attn": True, "torch_dtype": "bfloat16"}
VIT6B = dict(VIT300, hidden_size=3200, intermediate_size=12800, num_hidden_layers=45,
             num_attention_heads=25, qkv_bias=False, qk_normalization=True,
             norm_type="rms_norm", drop_path_rate=0.4)
TOP = {"architectures": ["InternVLChatModel"], "model_type": "internvl_chat",
       "auto_map": {"AutoConfig": "configuration_internvl_chat.InternVLChatConfig",
                    "AutoModel": "modeling_internvl_chat.InternVLChatModel",
                    "AutoModelForCausalLM": "modeling_internvl_chat.InternVLChatModel"},
       "downsample_ratio": 0.5, "dynamic_image_size": True, "force_image_size": 448,
       "max_dynamic_patch": 12, "min_dynamic_patch": 1, "ps_version": "v2", "select_layer": -1,
       "template": "internvl2_5", "use_thumbnail": True, "use_backbone_lora": 0,
       "use_llm_lora": 0, "torch_dtype": "bfloat16", "tie_word_embeddings": False}
def qwen2(h, inter, layers, heads, kv, **kw):
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": h,
            "intermediate_size": inter, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": 151674,
            "max_position_embeddings": 32768, "max_window_layers": 70, "rope_theta": 1000000.0,
            "rms_norm_eps": 1e-06, "hidden_act": "silu", "sliding_window": 32768,
            "use_sliding_window": False, "tie_word_embeddings": False, "bos_token_id": 151643,
            "eos_token_id": 151645, "torch_dtype": "bfloat16", **kw}
def qwen3(h, inter, layers, heads, kv, **kw):
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": h,
            "intermediate_size": inter, "num_hidden_layers": layers, "head_dim": 128,
            "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": 151936,
            "max_position_embeddings": 40960, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
            "hidden_act": "silu", "attention_bias": False, "sliding_window": None,
            "use_sliding_window": False, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16", **kw}
def write(name, llm, vit, **top):
    cfg = dict(TOP, **top)
    cfg["_name_or_path"] = name
    cfg["vision_config"] = vit
    cfg["llm_config"] = llm
    open(f"{name.split('/')[-1].lower()}.config.json", "w").write(json.dumps(cfg, indent=1) + "\n")
write("OpenGVLab/InternVL3-1B", qwen2(896, 4864, 24, 14, 2, max_window_layers=21), VIT300)
write("OpenGVLab/InternVL3-8B", qwen2(3584, 18944, 28, 28, 4, max_window_layers=28), VIT300)
write("OpenGVLab/InternVL3-78B", qwen2(8192, 29568, 80, 64, 8, max_window_layers=70), VIT6B)
write("OpenGVLab/InternVL2_5-8B", {
    "architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 92553, "max_position_embeddings": 32768,
    "rope_theta": 1000000, "rope_scaling": {"type": "dynamic", "factor": 2.0},
    "rms_norm_eps": 1e-05, "hidden_act": "silu", "bias": False, "tie_word_embeddings": False,
    "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2, "torch_dtype": "bfloat16"},
    VIT300, ps_version="v2", template="internvl2_5")
write("OpenGVLab/InternVL3_5-8B", qwen3(4096, 12288, 36, 32, 8), VIT300,
      template="internvl2_5")
write("OpenGVLab/InternVL3_5-30B-A3B", dict(
    qwen3(2048, 6144, 48, 32, 4), architectures=["Qwen3MoeForCausalLM"],
    model_type="qwen3_moe", moe_intermediate_size=768, num_experts=128,
    num_experts_per_tok=8, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True,
    output_router_logits=False, router_aux_loss_coef=0.001), VIT300)
# synthetic: small towers with each flag flipped, a small Llama / Qwen2 text model
def tiny_llm(arch="LlamaForCausalLM", mt="llama", **kw):
    return {"architectures": [arch], "model_type": mt, "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 8, "vocab_size": 1024, "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-05, "hidden_act": "silu", "tie_word_embeddings": False,
            "torch_dtype": "bfloat16", **kw}
def tiny_vit(**kw):
    return dict({"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b",
                 "hidden_size": 40, "intermediate_size": 64, "num_hidden_layers": 6,
                 "num_attention_heads": 5, "image_size": 224, "patch_size": 14,
                 "qkv_bias": False, "qk_normalization": True, "norm_type": "rms_norm",
                 "layer_norm_eps": 1e-06, "torch_dtype": "bfloat16"}, **kw)
write("tiny-internvit-6b-like-select-2", tiny_llm(), tiny_vit(), select_layer=-2,
      downsample_ratio=0.25)
write("tiny-internvit-layernorm-qkvbias-select3", tiny_llm("Qwen2ForCausalLM", "qwen2"),
      tiny_vit(hidden_size=64, num_attention_heads=8, qkv_bias=True,
               qk_normalization=False, norm_type="layer_norm", patch_size=16), select_layer=3)
write("tiny-internvit-mlp-36", tiny_llm(), tiny_vit(hidden_size=32, num_attention_heads=4,
                                                    intermediate_size=36))
write("tiny-internvit-defaults", tiny_llm(), {"architectures": ["InternVisionModel"],
                                              "num_hidden_layers": 2})
write("tiny-internvl-mistral-llm", tiny_llm("MistralForCausalLM", "mistral"), tiny_vit())

# the kin: H2OVL (InternVL's tower as it is), NVLM-D (7 dummy heads, a wide mlp1 without
# biases), Skywork-R1V (its own class: image only, no data mode)
VIT6B_V15 = dict(VIT6B, drop_path_rate=0.0)
def kin(name, arch, model_type, llm, vit, **top):
    write(name, llm, vit, architectures=[arch], model_type=model_type, auto_map={}, **top)
kin("nvidia/NVLM-D-72B", "NVLM_D", "NVLM_D", qwen2(8192, 29568, 80, 64, 8, vocab_size=151552),
    VIT6B_V15, template="chatml")
kin("Skywork/Skywork-R1V-38B", "SkyworkR1VChatModel", "skywork_chat", qwen2(
    5120, 27648, 64, 40, 8, vocab_size=152064, max_position_embeddings=131072,
    sliding_window=131072, max_window_layers=64), VIT6B, template="skywork-r1v")
danube2 = dict(tiny_llm("MistralForCausalLM", "mistral"), hidden_size=2560,
               intermediate_size=6912, num_hidden_layers=24, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=32000, max_position_embeddings=8192,
               rope_theta=10000.0, sliding_window=None)
kin("h2oai/h2ovl-mississippi-2b", "H2OVLChatModel", "h2ovl_chat", danube2, VIT300,
    ps_version="v2")
danube3 = dict(tiny_llm(), hidden_size=1536, intermediate_size=4096, num_hidden_layers=16,
               num_attention_heads=16, num_key_value_heads=8, vocab_size=32000,
               max_position_embeddings=8192, rope_theta=100000.0)
kin("h2oai/h2ovl-mississippi-800m", "H2OVLChatModel", "h2ovl_chat", danube3, VIT300,
    ps_version="v2")
kin("tiny-nvlm-d-5-heads", "NVLM_D", "NVLM_D", tiny_llm(), tiny_vit())
kin("tiny-skywork-r1v", "SkyworkR1VChatModel", "skywork_chat", tiny_llm(),
    tiny_vit(qkv_bias=True, norm_type="layer_norm"))
kin("tiny-h2ovl", "H2OVLChatModel", "h2ovl_chat", tiny_llm(), tiny_vit(num_attention_heads=4))

# InternS1 (remote code, model_type interns1): vLLM builds it with interns1.py, the class of the
# Hugging Face format's InternVLForConditionalGeneration; its keys are that format's
def interns1(name, text, vit):
    cfg = {"architectures": ["InternS1ForConditionalGeneration"], "model_type": "interns1",
           "_name_or_path": name, "downsample_ratio": 0.5, "image_seq_length": 256,
           "image_token_id": 152957, "projector_hidden_act": "gelu", "vision_feature_layer": -1,
           "vision_feature_select_strategy": "default", "torch_dtype": "bfloat16",
           "tie_word_embeddings": False, "vision_config": vit, "text_config": text}
    open(f"{name.split('/')[-1].lower()}.config.json", "w").write(json.dumps(cfg, indent=1) + "\n")
S1_VIT300 = {"architectures": ["InternVisionModel"], "model_type": "interns1_vision",
             "attention_bias": True, "hidden_act": "gelu", "hidden_size": 1024,
             "image_size": [448, 448], "intermediate_size": 4096, "layer_norm_eps": 1e-06,
             "layer_scale_init_value": 0.1, "norm_type": "layer_norm", "num_attention_heads": 16,
             "num_channels": 3, "num_hidden_layers": 24, "patch_size": [14, 14],
             "projection_dropout": 0.0, "use_qk_norm": False,
             "use_absolute_position_embeddings": True, "use_mask_token": False,
             "use_mean_pooling": True, "drop_path_rate": 0.1}
S1_VIT6B = dict(S1_VIT300, attention_bias=False, hidden_size=3200, intermediate_size=12800,
                norm_type="rms_norm", num_attention_heads=25, num_hidden_layers=45,
                use_qk_norm=True)
interns1("internlm/Intern-S1-mini", qwen3(4096, 12288, 36, 32, 8, vocab_size=153216), S1_VIT300)
interns1("internlm/Intern-S1", dict(
    qwen3(4096, 12288, 94, 64, 4, vocab_size=153216), architectures=["Qwen3MoeForCausalLM"],
    model_type="qwen3_moe", moe_intermediate_size=1536, num_experts=128,
    num_experts_per_tok=8, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True),
    S1_VIT6B)

# InternLM2's `bias` flag on (its remote config class's default): vLLM 0.33's internlm2.py
# builds wqkv, wo, w1/w3 and w2 without biases whatever it says; inside InternVLChatModel (8
# heads: TP 1 to 8) and alone (InternLM2ForCausalLM, model_type internlm2)
def internlm2(**kw):
    return dict(tiny_llm("InternLM2ForCausalLM", "internlm2"), bias=True, **kw)
write("tiny-internvl-internlm2-bias", internlm2(num_key_value_heads=2), tiny_vit(
    hidden_size=64, num_attention_heads=8))
open("tiny-internlm2-bias.config.json", "w").write(json.dumps(dict(
    internlm2(num_key_value_heads=4), _name_or_path="tiny-internlm2-bias"), indent=1) + "\n")
