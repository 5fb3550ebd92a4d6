# ruff: noqa
"""Write the config.json files here (published checkpoints' values as known, not downloaded;
synthetic tiny ones). From the project root:

    python tests/data/weights_census/mm_nemo/make_configs.py
"""
import os; os.chdir(os.path.dirname(os.path.abspath(__file__)))
import json
# NVIDIA-Nemotron-Nano-12B-v2's language model (62 layers: 28 Mamba2, 28 MLP, 6 attention)
NANO12B = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "attention_bias": False, "chunk_size": 128, "conv_kernel": 4, "head_dim": 128,
    "hidden_size": 5120,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-",
    "intermediate_size": 20480, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 80,
    "mamba_hidden_act": "silu", "mamba_num_heads": 128, "mamba_proj_bias": False,
    "max_position_embeddings": 131072, "mlp_bias": False, "mlp_hidden_act": "relu2",
    "n_groups": 8, "num_attention_heads": 40, "num_hidden_layers": 62,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "use_bias": False, "use_conv_bias": True, "vocab_size": 131072,
    "torch_dtype": "bfloat16"}
# C-RADIOv2-H's four teachers (SigLIP2-g, DFN CLIP, DINOv2-g, SAM-H): cls token per teacher
TEACHERS = [{"name": "siglip2-g", "use_summary": True}, {"name": "dfn_clip", "use_summary": True},
            {"name": "dino_v2", "use_summary": False}, {"name": "sam", "use_summary": False}]
RADIO_H = {"architectures": ["RADIOModel"], "model_type": "radio", "patch_size": 16,
           "max_resolution": 2048, "preferred_resolution": [512, 512],
           "args": {"model": "vit_huge_patch16_224", "cpe_max_size": 2048,
                    "cls_token_per_teacher": True, "register_multiple": 8,
                    "teachers": TEACHERS},
           "torch_dtype": "bfloat16"}
TOP = {"architectures": ["NemotronH_Nano_VL_V2"], "model_type": "NemotronH_Nano_VL_V2",
       "auto_map": {"AutoConfig": "configuration.NemotronH_Nano_VL_V2_Config",
                    "AutoModel": "modeling.NemotronH_Nano_VL_V2",
                    "AutoModelForCausalLM": "modeling.NemotronH_Nano_VL_V2"},
       "downsample_ratio": 0.5, "force_image_size": 512, "patch_size": 16,
       "img_context_token": "<image>", "img_context_token_id": 18,
       "image_tag_type": "internvl", "ps_version": "v2", "template": "nemotron-h-5p5-reasoning",
       "norm_mean": [0.48145466, 0.4578275, 0.40821073],
       "norm_std": [0.26862954, 0.26130258, 0.27577711],
       "projector_hidden_size": 20480, "vit_hidden_size": 1280, "use_thumbnail": True,
       "torch_dtype": "bfloat16"}


def write(name, llm, vit, **top):
    cfg = dict(TOP, **top)
    cfg["_name_or_path"] = name
    cfg["vision_config"] = vit
    cfg["llm_config"] = llm
    open(f"{name.split('/')[-1].lower()}.config.json", "w").write(json.dumps(cfg, indent=1) + "\n")


def tiny_llm(**kw):
    return dict(NANO12B, hidden_size=256, hybrid_override_pattern="M-*M-", num_hidden_layers=5,
                intermediate_size=512, mamba_num_heads=16, mamba_head_dim=32, n_groups=8,
                num_attention_heads=8, num_key_value_heads=8, head_dim=32, ssm_state_size=16,
                vocab_size=1024, **kw)


def radio(model, **args):
    return dict(RADIO_H, args=dict(RADIO_H["args"], model=model, **args))


write("nvidia/NVIDIA-Nemotron-Nano-12B-v2-VL-BF16", NANO12B, RADIO_H)
# small RADIO (vit_small: 384 wide, 12 layers, 6 heads: whole attention at TP 4 and 8), one
# cls token, no registers, no summary teacher (no buffer), video tubelets of 2 frames
write("tiny-radio-small-one-cls", tiny_llm(), radio(
    "vit_small_patch16_224", cls_token_per_teacher=False, register_multiple=None,
    cpe_max_size=512, teachers=[{"name": "a", "use_summary": False}]),
    projector_hidden_size=640, vit_hidden_size=384)
write("tiny-radio-base-video2", tiny_llm(), dict(radio(
    "vit_base_patch16_224", cpe_max_size=1000, register_multiple=16,
    teachers=TEACHERS[:3]), video_temporal_patch_size=2, patch_size=14),
    projector_hidden_size=512, vit_hidden_size=768, downsample_ratio=0.25)

# Molmo (remote code, model_type molmo: every key at the top level; the tower's sizes are
# vLLM's own, VisionBackboneConfig: CLIP ViT-L/14 at 336 px, not read from the config)
MOLMO = {"architectures": ["MolmoForCausalLM"], "model_type": "molmo",
         "auto_map": {"AutoConfig": "config_molmo.MolmoConfig",
                      "AutoModelForCausalLM": "modeling_molmo.MolmoForCausalLM"},
         "clip_qkv": None, "initializer_range": 0.02, "layer_norm_eps": 1e-06,
         "layer_norm_type": "rms", "max_position_embeddings": 4096, "norm_after": False,
         "tie_word_embeddings": False, "torch_dtype": "float32", "use_cache": True,
         "use_position_ids": True, "weight_tying": False}


def molmo(name, **kw):
    cfg = dict(MOLMO, _name_or_path=name, **kw)
    open(f"{name.split('/')[-1].lower()}.config.json", "w").write(json.dumps(cfg, indent=1) + "\n")


molmo("allenai/Molmo-7B-D-0924", attention_layer_norm=False, embedding_size=152064,
      hidden_size=3584, intermediate_size=37888, num_attention_heads=28, num_hidden_layers=28,
      num_key_value_heads=4, qkv_bias=True, rope_theta=1000000.0, vocab_size=152064)
molmo("allenai/Molmo-7B-O-0924", attention_layer_norm=True, embedding_size=100352,
      hidden_size=4096, intermediate_size=22016, num_attention_heads=32, num_hidden_layers=32,
      num_key_value_heads=32, qkv_bias=False, rope_theta=500000.0, vocab_size=100278)
# synthetic: qk norms with grouped KV heads (2 of 8), norm_after, a padded embedding
molmo("tiny-molmo-qknorm-gqa-norm-after", attention_layer_norm=True, hidden_size=256,
      embedding_size=1024,
      intermediate_size=1024, num_attention_heads=8, num_hidden_layers=3, num_key_value_heads=2,
      qkv_bias=True, rope_theta=10000.0, vocab_size=1000, norm_after=True,
      torch_dtype="bfloat16")
# (vLLM refuses it: ModelConfig's total_num_kv_heads must be an integer)
molmo("tiny-molmo-kv-null", attention_layer_norm=False, hidden_size=256, embedding_size=1024,
      intermediate_size=1024, num_attention_heads=8, num_hidden_layers=2,
      num_key_value_heads=None, qkv_bias=False, rope_theta=10000.0, vocab_size=1000,
      torch_dtype="bfloat16")
