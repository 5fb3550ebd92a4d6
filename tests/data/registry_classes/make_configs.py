# ruff: noqa
"""Writes configs.json: for each class of vLLM 0.33's registry this check decided (README.md),
a config.json carrying the keys vLLM's class reads (written from its model file), the decision
(read / fixed / refused) and, for the classes kvcli sizes, kvcli's blocks at 80 GiB and its
layer kinds, as `kvcli config --model-config FILE --gpu-memory-gib 80 --json` gives them.

    cd REPO && KVCLI_PURE=1 .venv/bin/python tests/data/registry_classes/make_configs.py
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 4096,
        "torch_dtype": "bfloat16"}
SWA = {"sliding_window": 512, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
MLA = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
       "qk_nope_head_dim": 128, "v_head_dim": 128}


def text(model_type, **extra):
    return {"model_type": model_type, **BASE, "head_dim": 128, **extra}


# architecture -> (model_type, keys beyond BASE): read as vLLM builds it, or fixed here
READ = {
    # vllm/models/<name>/: plain Attention, sliding by layer_types
    "MuseSparkForConditionalGeneration": ("muse_spark", {"text_config": text(
        "muse_spark_text", **SWA), "vision_config": {}, "audio_config": {}}),
    "FlintForCausalLM": ("flint", {"head_dim": 128, **SWA}),
    "MuseGlimmerForCausalLM": ("muse_glimmer", {"head_dim": 128, **SWA}),
    # model_executor/models/: Llama-like layers, head_dim hidden / heads or given
    "OrionForCausalLM": ("orion", {}),
    # nemotron_nas.py: block_configs a layer (no-op attention or FFN, KV heads a layer: its
    # own check, ../nemotron_nas/), num_key_value_heads ignored
    "DeciLMForCausalLM": ("nemotron-nas", {"block_configs": [
        {"attention": {"n_heads_in_group": g, "no_op": g is None},
         "ffn": {"ffn_mult": m, "no_op": m is None}}
        for g, m in ((4, 2.625), (None, 1.0), (2, None), (8, 5.25))]}),
    "SolarForCausalLM": ("solar", {}),
    "MiniCPMForCausalLM": ("minicpm", {}),
    "TeleFLMForCausalLM": ("teleflm", {}),
    "Step1ForCausalLM": ("step1", {"num_key_value_heads": None, "num_attention_groups": 2}),
    "BailingMoeForCausalLM": ("bailing_moe", {"head_dim": 128}),
    "BailingMoeV2ForCausalLM": ("bailing_moe_v2", {"head_dim": 128}),
    "SarvamMoEForCausalLM": ("sarvam_moe", {"head_dim": 128}),
    "Param2MoEForCausalLM": ("param2moe", {"head_dim": 128}),
    "PanguEmbeddedForCausalLM": ("PanguEmbedded", {}),
    "NanbeigeForCausalLM": ("nanbeige", {}),
    "MistralLarge3ForCausalLM": ("deepseek_v3", MLA),
    "PanguUltraMoEForCausalLM": ("pangu_ultra_moe", MLA),
    # wrappers over a registered text model (their text_config)
    "BeeForConditionalGeneration": ("bee", {"text_config": text("qwen3")}),
    "RForConditionalGeneration": ("rvl", {"text_config": text("qwen2")}),
    "Cosmos3ForConditionalGeneration": ("cosmos3", {"text_config": text("qwen3_vl_text")}),
    "VoxtralRealtimeGeneration": ("voxtral", {"text_config": text("llama", sliding_window=512)}),
    # fixed here
    "Plamo3ForCausalLM": ("plamo3", {"num_hidden_layers": 16, "head_dim": 128,
                                     "window_size": 2048, "sliding_window_pattern": 8}),
    "ExaoneForCausalLM": ("exaone", {"num_hidden_layers": None, "num_layers": 4}),
    "TeleChat2ForCausalLM": ("telechat", {"num_hidden_layers": None, "n_layer": 4,
                                          "num_attention_heads": None, "n_head": 8,
                                          "num_key_value_heads": None}),
    "Qwen3ASRRealtimeGeneration": ("qwen3_asr", {"thinker_config": {
        "text_config": text("qwen3")}}),
    # read since 2026-12-07 (kvcore/models/mimo_v2.py, built by vLLM in ../mimo_v2/)
    "MiMoV2ForCausalLM": ("mimo_v2", {
        "head_dim": 192, "v_head_dim": 128, "swa_head_dim": 192, "swa_v_head_dim": 128,
        "swa_num_attention_heads": 16, "swa_num_key_value_heads": 8,
        "hybrid_layer_pattern": [0, 1, 1, 0], "sliding_window_size": 128,
        "add_swa_attention_sink_bias": True, "moe_layer_freq": [0, 1, 1, 1],
        "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 256,
        "intermediate_size": 2048, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
        "hidden_act": "silu", "layernorm_epsilon": 1e-05}),
}
FIXED = {"Plamo3ForCausalLM", "ExaoneForCausalLM", "TeleChat2ForCausalLM",
         "Qwen3ASRRealtimeGeneration"}
# refused by name: kvcore/models/unsupported.py (their configs need no more than BASE: the
# name is refused before any key is read)
REFUSED = [
    "Glm5NextForCausalLM", "Glm5NextForConditionalGeneration", "Qwen4ExpForCausalLM",
    "Qwen4ExpForConditionalGeneration", "InklingForCausalLM", "InklingForConditionalGeneration",
    "DeepseekV41ForCausalLM", "Dots3NoteForCausalLM",
    "MiMoV2OmniForCausalLM", "InternS2MobiusForConditionalGeneration",
    "NemotronParseForConditionalGeneration", "RadioMBartPrefixForCausalLM", "HfMoondream",
    "BertModel", "RobertaForSequenceClassification",
    "XLMRobertaModel", "ModernBertModel", "GteNewModel", "NomicBertModel", "HF_ColBERT",
    "SiglipModel", "LlamaBidirectionalModel", "DeepseekV3BidirectionalModel",
    "EmbeddingGemma2Model",
]


def sized(cfg):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    r = subprocess.run([sys.executable, "-m", "kvcli", "config", "--model-config", f.name,
                        "--gpu-memory-gib", "80", "--json"], capture_output=True, text=True,
                       env={**os.environ, "KVCLI_PURE": "1"})
    os.unlink(f.name)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    return d["num_blocks"], d["layer_kinds"]


def main():
    out = {}
    for arch, (model_type, extra) in READ.items():
        cfg = {"architectures": [arch], "model_type": model_type, **BASE, **extra}
        cfg = {k: v for k, v in cfg.items() if v is not None}
        blocks, kinds = sized(cfg)
        out[arch] = {"decision": "fixed" if arch in FIXED else "read", "config": cfg,
                     "num_blocks": blocks, "layer_kinds": kinds}
    for arch in REFUSED:
        out[arch] = {"decision": "refused", "config": {"architectures": [arch], **BASE}}
    (HERE / "configs.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
