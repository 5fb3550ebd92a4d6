"""Model presets: the public `config.json` of each model, typed in (only the keys shown; no
download at run time). `read_hf_config` turns them into geometry exactly as it does a file given
with --model-config, so a preset and its real config.json size the same.

Sources (Hugging Face model repositories, config.json):
  meta-llama/Llama-3.1-8B, meta-llama/Llama-3.1-70B, Qwen/Qwen3-8B,
  mistralai/Mistral-7B-Instruct-v0.3, mistralai/Mixtral-8x7B-v0.1, google/gemma-3-27b-it,
  openai/gpt-oss-20b, ai21labs/Jamba-v0.1, deepseek-ai/DeepSeek-V3,
  deepseek-ai/DeepSeek-V2-Lite, Qwen/Qwen3-Next-80B-A3B-Instruct,
  nvidia/NVIDIA-Nemotron-Nano-9B-v2, zai-org/GLM-4.5-Air (the published shapes; keys that only name tokens,
  initialisers, dropout or kernels left out).
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import read_hf_config
from kvcore.named_choices import named_choices

_LLAMA31_ROPE = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                 "original_max_position_embeddings": 8192, "rope_type": "llama3"}

PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B", {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
        "rope_scaling": _LLAMA31_ROPE, "rope_theta": 500000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 128256}),
    "llama-3.1-70b": ("meta-llama/Llama-3.1-70B", {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
        "hidden_size": 8192, "intermediate_size": 28672, "max_position_embeddings": 131072,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": 64,
        "num_hidden_layers": 80, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
        "rope_scaling": _LLAMA31_ROPE, "rope_theta": 500000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 128256}),
    "qwen3-8b": ("Qwen/Qwen3-8B", {
        "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "head_dim": 128,
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
        "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
        "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_sliding_window": False, "vocab_size": 151936}),
    "mistral-7b-v0.3": ("mistralai/Mistral-7B-Instruct-v0.3", {
        "architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32768}),
    "mixtral-8x7b": ("mistralai/Mixtral-8x7B-v0.1", {
        "architectures": ["MixtralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
        "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "num_local_experts": 8, "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 32000}),
    # Gemma 3's text_config omits keys its config class defaults: vocab_size 262208,
    # sliding_window_pattern 6 (5 sliding layers, then 1 full), max_position_embeddings 131072.
    # Its vision_config is SigLIP so400m at 896 px, which vLLM builds and loads with the
    # projector (423,060,336 parameters: `kvcore.models.siglip`).
    "gemma-3-27b": ("google/gemma-3-27b-it", {
        "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
        "eoi_token_index": 256000, "image_token_index": 262144, "model_type": "gemma3",
        "mm_tokens_per_image": 256, "torch_dtype": "bfloat16",
        "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                        "model_type": "gemma3_text", "num_attention_heads": 32,
                        "num_hidden_layers": 62, "num_key_value_heads": 16,
                        "query_pre_attn_scalar": 168,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                        "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16,
                          "num_hidden_layers": 27, "patch_size": 14,
                          "vision_use_head": False}}),
    # Attention sinks (one learned logit per head) are weights; they hold no KV.
    "gpt-oss-20b": ("openai/gpt-oss-20b", {
        "architectures": ["GptOssForCausalLM"], "attention_bias": True, "experts_per_token": 4,
        "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096,
        "intermediate_size": 2880,
        "layer_types": ["sliding_attention", "full_attention"] * 12,
        "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
        "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8,
        "num_local_experts": 32,
        "quantization_config": {"modules_to_not_convert": [
            "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
            "lm_head"], "quant_method": "mxfp4"},
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                         "original_max_position_embeddings": 4096, "rope_type": "yarn",
                         "truncate": False},
        "rope_theta": 150000, "sliding_window": 128, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 201088}),
    # Hybrid: attention at layers 4, 12, 20, 28 (i % 8 == 4), Mamba-1 elsewhere; MoE every other
    # layer (i % 2 == 1).
    "jamba-v0.1": ("ai21labs/Jamba-v0.1", {
        "architectures": ["JambaForCausalLM"], "attn_layer_offset": 4, "attn_layer_period": 8,
        "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 14336, "mamba_conv_bias": True,
        "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256, "mamba_expand": 2,
        "mamba_proj_bias": False, "max_position_embeddings": 262144, "model_type": "jamba",
        "num_attention_heads": 32, "num_experts": 16, "num_experts_per_tok": 2,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
        "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_mamba_kernels": True, "vocab_size": 65536}),
    # Multi-head latent attention (kvcore.models.mla): every layer caches one 576-wide latent;
    # fp8 weights with 128x128 block scales; 3 dense layers, then 256 routed experts + 1 shared.
    "deepseek-v3": ("deepseek-ai/DeepSeek-V3", {
        "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False,
        "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
        "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
        "model_type": "deepseek_v3", "moe_intermediate_size": 2048, "moe_layer_freq": 1,
        "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True,
        "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
        "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                "quant_method": "fp8", "weight_block_size": [128, 128]},
        "rms_norm_eps": 1e-06,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                         "type": "yarn"},
        "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
        "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc",
        "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 129280}),
    # The small MLA model (one GPU): no query compression (q_lora_rank null), 1 dense layer,
    # then 64 routed experts + 2 shared; bf16 weights.
    "deepseek-v2-lite": ("deepseek-ai/DeepSeek-V2-Lite", {
        "architectures": ["DeepseekV2ForCausalLM"], "attention_bias": False,
        "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
        "model_type": "deepseek_v2", "moe_intermediate_size": 1408, "moe_layer_freq": 1,
        "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": False,
        "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
        "num_key_value_heads": 16, "q_lora_rank": None, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
        "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                         "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                         "type": "yarn"},
        "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax",
        "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy",
        "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 102400}),
    # Gated DeltaNet (kvcore.models.qwen3_next): every 4th layer full attention, the rest kept
    # as Mamba states; 512 experts.
    "qwen3-next-80b-a3b": ("Qwen/Qwen3-Next-80B-A3B-Instruct", {
        "architectures": ["Qwen3NextForCausalLM"], "attention_bias": False,
        "decoder_sparse_step": 1, "full_attention_interval": 4, "head_dim": 256,
        "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5120,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "linear_value_head_dim": 128,
        "max_position_embeddings": 262144, "mlp_only_layers": [], "model_type": "qwen3_next",
        "moe_intermediate_size": 512, "norm_topk_prob": True, "num_attention_heads": 16,
        "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
        "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
        "rope_scaling": None, "rope_theta": 10000000, "shared_expert_intermediate_size": 512,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_sliding_window": False,
        "vocab_size": 151936}),
    # Nemotron-H (kvcore.models.nemotron_h): 27 Mamba2, 4 attention and 25 feed-forward-only
    # layers; the SSM state in float32.
    "nemotron-nano-9b-v2": ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", {
        "architectures": ["NemotronHForCausalLM"], "attention_bias": False, "conv_kernel": 4,
        "head_dim": 128, "hidden_size": 4480,
        "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
        "intermediate_size": 15680, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 80,
        "mamba_hidden_act": "silu", "mamba_num_heads": 128, "max_position_embeddings": 131072,
        "mlp_hidden_act": "relu2", "model_type": "nemotron_h", "n_groups": 8,
        "num_attention_heads": 40, "num_hidden_layers": 56, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "sliding_window": None, "ssm_state_size": 128,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 131072}),
    # GLM-4.5-Air (kvcore.models.mtp_draft for its MTP module): GQA with head_dim 128 (not
    # hidden / heads), attention biases, no q/k norms (GLM-4.5 and 4.6 have them), 1 dense
    # layer, then 128 routed experts + 1 shared; one MTP module.
    "glm-4.5-air": ("zai-org/GLM-4.5-Air", {
        "architectures": ["Glm4MoeForCausalLM"], "attention_bias": True,
        "first_k_dense_replace": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 10944, "max_position_embeddings": 131072, "model_type": "glm4_moe",
        "moe_intermediate_size": 1408, "n_group": 1, "n_routed_experts": 128,
        "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 96,
        "num_experts_per_tok": 8, "num_hidden_layers": 46, "num_key_value_heads": 8,
        "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 1000000, "routed_scaling_factor": 1.0,
        "tie_word_embeddings": False, "topk_group": 1, "torch_dtype": "bfloat16",
        "use_qk_norm": False, "vocab_size": 151552}),
}


def _key(name: str) -> str:
    return name.strip().lower()


_BY_REPO = {_key(repo): key for key, (repo, _) in PRESETS.items()}


def preset_names() -> list[str]:
    return list(PRESETS)


def find_preset(name: str) -> str | None:
    """The preset key for a preset name or its Hugging Face repo id (case-insensitive)."""
    k = _key(name)
    if k in PRESETS:
        return k
    return _BY_REPO.get(k) or _BY_REPO.get(next((r for r in _BY_REPO if r.endswith("/" + k)), ""))


def load_preset(name: str, *, others: bool = True) -> ModelGeometry:
    """The preset's geometry; an `InputError` naming the presets for another name, and with
    ``others`` the other ways to give a model (`kvcli curve` and `bench --gpu` have none)."""
    key = find_preset(name)
    if key is None:
        hint = (" (or give a HF config.json as model_config, or the layers, kv_heads and "
                "head_dim)" if others else "")
        raise InputError(f"unknown model {clipped(name)}; "
                         f"{named_choices(name, list(PRESETS), 'presets', 'kvcli config --list')}"
                         f"{hint}", field="model")
    repo, cfg = PRESETS[key]
    return read_hf_config(cfg, name=key, source=f"preset {key} ({repo})")
