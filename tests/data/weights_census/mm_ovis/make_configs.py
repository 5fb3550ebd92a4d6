# ruff: noqa
"""Write this folder's ``*.config.json`` (python3 make_configs.py): the published checkpoints'
configs as remembered (not downloaded; README.md) and small synthetic variants."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
         "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
         "head_dim": 128, "hidden_act": "silu", "initializer_range": 0.02,
         "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_scaling": None,
         "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False,
         "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 151936}
SIGLIP2_SO400M = {"model_type": "siglip2_navit", "hidden_size": 1152,
                  "intermediate_size": 4304, "num_hidden_layers": 27,
                  "num_attention_heads": 16, "num_channels": 3, "num_patches": -1,
                  "image_size": 512, "patch_size": 16, "hidden_act": "gelu_pytorch_tanh",
                  "layer_norm_eps": 1e-6, "attention_dropout": 0.0, "hidden_stride": 2,
                  "window_size": 112, "fullatt_block_indexes": None,
                  "temporal_patch_size": 1, "preserve_original_pe": True, "use_rope": True}

QWEN2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "attention_dropout": 0.0,
         "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
         "initializer_range": 0.02, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
         "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 32768,
         "use_sliding_window": False, "torch_dtype": "bfloat16", "use_cache": True}
AIMV2 = {"model_type": "aimv2", "num_hidden_layers": 24, "num_channels": 3, "image_size": 448,
         "patch_size": 14, "rms_norm_eps": 1e-5, "qkv_bias": False, "mlp_bias": False,
         "hidden_act": "silu", "attention_dropout": 0.0}


def ovis(llm, tokenizer, hidden):
    return {"architectures": ["Ovis"], "model_type": "ovis", "torch_dtype": "bfloat16",
            "hidden_size": hidden, "multimodal_max_length": 32768, "llm_config": llm,
            "visual_tokenizer_config": tokenizer, "disable_tie_weight": False}


def tokenizer(kind, backbone, vocab=65536, stride=2):
    return {"model_type": kind, "vocab_size": vocab, "tokenize_function": "softmax",
            "tau": 1.0, "depths": None, "drop_cls_token": False, "hidden_stride": stride,
            "backbone_config": backbone}


def ovis2_5(arch, llm, vit, hidden, vocab=65536):
    return {"architectures": [arch], "model_type": "ovis2_5", "torch_dtype": "bfloat16",
            "hidden_size": hidden, "visual_vocab_size": vocab, "llm_config": llm,
            "vit_config": vit, "conversation_formatter_class": "Qwen3ConversationFormatter"}


CONFIGS = {
    # AIDC-AI/Ovis2.5-9B: Qwen3-8B
    "ovis2.5-9b": ovis2_5("Ovis2_5", {**QWEN3, "hidden_size": 4096, "intermediate_size": 12288,
                                      "num_hidden_layers": 36, "num_attention_heads": 32,
                                      "num_key_value_heads": 8, "max_window_layers": 36,
                                      "tie_word_embeddings": False}, SIGLIP2_SO400M, 4096),
    # AIDC-AI/Ovis2.5-2B: Qwen3-1.7B (tied embeddings)
    "ovis2.5-2b": ovis2_5("Ovis2_5", {**QWEN3, "hidden_size": 2048, "intermediate_size": 6144,
                                      "num_hidden_layers": 28, "num_attention_heads": 16,
                                      "num_key_value_heads": 8, "max_window_layers": 28,
                                      "tie_word_embeddings": True}, SIGLIP2_SO400M, 2048),
    # AIDC-AI/Ovis2.6-30B-A3B: Qwen3-30B-A3B
    "ovis2.6-30b-a3b": ovis2_5("Ovis2_6_MoeForCausalLM", {
        **QWEN3, "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 4, "moe_intermediate_size": 768,
        "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True,
        "decoder_sparse_step": 1, "mlp_only_layers": [], "max_window_layers": 48,
        "tie_word_embeddings": False}, SIGLIP2_SO400M, 2048),
    # synthetic: Ovis2.6's dense class on a tiny Qwen3; the NaFlex patch linear (num_patches
    # > 0, 64 positions), 6 vision heads (TP 4 and 8 refused), a small visual vocabulary
    "tiny-ovis2.6-naflex": ovis2_5("Ovis2_6ForCausalLM", {
        **QWEN3, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 32,
        "vocab_size": 1024, "tie_word_embeddings": False}, {
        **SIGLIP2_SO400M, "hidden_size": 96, "intermediate_size": 200, "num_hidden_layers": 2,
        "num_attention_heads": 6, "num_patches": 64, "hidden_stride": 3}, 256, vocab=1000),
    # synthetic: no original position table, the conv patch embedding, patch 14
    "tiny-ovis2.5-no-pe": ovis2_5("Ovis2_5", {
        **QWEN3, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32,
        "vocab_size": 1024, "tie_word_embeddings": True}, {
        **SIGLIP2_SO400M, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 3,
        "num_attention_heads": 8, "patch_size": 14, "preserve_original_pe": False}, 256,
        vocab=520),
    # AIDC-AI/Ovis2-8B: Qwen2.5-7B, aimv2-huge-patch14-448
    "ovis2-8b": ovis({**QWEN2, "hidden_size": 3584, "intermediate_size": 18944,
                      "num_hidden_layers": 28, "num_attention_heads": 28,
                      "num_key_value_heads": 4, "vocab_size": 152064,
                      "tie_word_embeddings": False}, tokenizer(
        "aimv2_visual_tokenizer", {**AIMV2, "hidden_size": 1536, "intermediate_size": 4096,
                                   "num_attention_heads": 12}), 3584),
    # AIDC-AI/Ovis2-2B: Qwen2.5-1.5B (tied), aimv2-large-patch14-448
    "ovis2-2b": ovis({**QWEN2, "hidden_size": 1536, "intermediate_size": 8960,
                      "num_hidden_layers": 28, "num_attention_heads": 12,
                      "num_key_value_heads": 2, "vocab_size": 151936,
                      "tie_word_embeddings": True}, tokenizer(
        "aimv2_visual_tokenizer", {**AIMV2, "hidden_size": 1024, "intermediate_size": 2816,
                                   "num_attention_heads": 8}), 1536),
    # AIDC-AI/Ovis1.6-Gemma2-9B: Gemma 2 9B, siglip-so400m-patch14-384
    "ovis1.6-gemma2-9b": ovis({
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 3584,
        "intermediate_size": 14336, "num_hidden_layers": 42, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 256, "vocab_size": 256000,
        "max_position_embeddings": 8192, "sliding_window": 4096, "query_pre_attn_scalar": 256,
        "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0,
        "hidden_activation": "gelu_pytorch_tanh", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "attention_bias": False, "tie_word_embeddings": True, "torch_dtype": "bfloat16"},
        tokenizer("siglip_visual_tokenizer", {
            "model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
            "num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 384,
            "patch_size": 14}), 3584),
    # synthetic: AIMv2 with biases, 5 heads (TP 2+ refused), a small visual vocabulary on a
    # tiny Llama (Ovis1.6-Llama3.2's text type)
    "tiny-ovis-aimv2-bias": ovis({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
        "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 2, "vocab_size": 2048, "max_position_embeddings": 4096,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}, tokenizer(
        "aimv2_visual_tokenizer", {**AIMV2, "hidden_size": 160, "intermediate_size": 320,
                                   "num_hidden_layers": 2, "num_attention_heads": 5,
                                   "image_size": 112, "qkv_bias": True, "mlp_bias": True},
        vocab=600, stride=3), 256),
    # nvidia/Eagle2.5-8B: Qwen2.5-7B, SigLIP-so400m at 448 (patch 14), the last layer
    "eagle2.5-8b": {"architectures": ["Eagle2_5_VLForConditionalGeneration"],
                    "model_type": "eagle_2_5_vl", "torch_dtype": "bfloat16",
                    "select_layer": -1, "downsample_ratio": 0.5, "force_image_size": 448,
                    "use_pixel_shuffle": True, "mlp_connector_layers": 2,
                    "image_token_index": 151667, "text_config": {
        **QWEN2, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 151674,
        "tie_word_embeddings": False}, "vision_config": {
        "model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
        "num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 448,
        "patch_size": 14}},
    # xlangai/OpenCUA-7B: Qwen2.5-VL-7B's vision tower on Qwen2.5-7B with 1-D RoPE
    "opencua-7b": {"architectures": ["OpenCUAForConditionalGeneration"],
                   "model_type": "opencua", "torch_dtype": "bfloat16",
                   "media_placeholder_token_id": 151664, "text_config": {
        **QWEN2, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
        "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 151936,
        "tie_word_embeddings": False}, "vision_config": {
        "depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
        "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14,
        "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112,
        "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2,
        "temporal_patch_size": 2}},
}
# synthetic variants of those: Eagle's select_layer -2 (no post norm), downsample 0.25 ...
CONFIGS["tiny-eagle2.5-select"] = {
    **CONFIGS["eagle2.5-8b"], "select_layer": -2, "downsample_ratio": 0.25,
    "force_image_size": 64, "text_config": {
        **QWEN2, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 1024,
        "tie_word_embeddings": True}, "vision_config": {
        "model_type": "siglip_vision_model", "hidden_size": 96, "intermediate_size": 200,
        "num_hidden_layers": 3, "num_attention_heads": 4, "image_size": 64, "patch_size": 8}}

# kakaocorp/kanana-1.5-v-3b-instruct (as remembered, sizes uncertain: README): Kanana-1.5-3B
# (Llama), Qwen2-VL's 675M ViT without its merger, a C-Abstractor (RegNet stages) to 2,304
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
         "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "rope_theta": 8000000.0,
         "attention_bias": False, "mlp_bias": False, "torch_dtype": "bfloat16"}
QWEN2_VL_VIT = {"depth": 32, "embed_dim": 1280, "hidden_size": 1280, "mlp_ratio": 4,
                "num_heads": 16, "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2,
                "temporal_patch_size": 2, "hidden_act": "quick_gelu"}
CONFIGS["kanana-1.5-v-3b"] = {
    "architectures": ["KananaVForConditionalGeneration"], "model_type": "kanana_v",
    "torch_dtype": "bfloat16", "text_config": {
        **LLAMA, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 32,
        "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 96,
        "vocab_size": 128259, "tie_word_embeddings": False},
    "vision_config": QWEN2_VL_VIT, "projector_config": {
        "depth": 3, "mlp_depth": 2, "encoder_hidden_size": 1280, "hidden_size": 1024,
        "output_hidden_size": 2304, "merge_size": 2, "pos_emb": True, "pos_emb_size": 576,
        "feature_layer_index": -1}}
# synthetic: no position table, depth 1 stages, an MLP of 3, 4 vision heads (TP 8 refused)
CONFIGS["tiny-kanana-v"] = {
    **CONFIGS["kanana-1.5-v-3b"], "text_config": {
        **LLAMA, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1024,
        "tie_word_embeddings": True},
    "vision_config": {**QWEN2_VL_VIT, "depth": 2, "embed_dim": 64, "hidden_size": 64,
                      "num_heads": 4},
    "projector_config": {"depth": 1, "mlp_depth": 3, "encoder_hidden_size": 64,
                         "hidden_size": 48, "output_hidden_size": 256, "merge_size": 2,
                         "pos_emb": False, "pos_emb_size": 64, "feature_layer_index": -1}}

if __name__ == "__main__":
    for name, cfg in CONFIGS.items():
        (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
