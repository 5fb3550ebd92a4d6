# ruff: noqa
"""Write this folder's configs: allenai/Molmo2-8B's, -4B's and -O-7B's config.json as remembered
(remote code, model_type molmo2: vit_config, adapter_config and text_config nested; only the
fields vLLM's molmo2.py reads, and the ids it reads off the wrapper), plus small synthetic
variants. A development tool: run it from the project root."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
IDS = dict(image_patch_id=151938, low_res_image_start_token_id=151940,
           image_start_token_id=151936, image_end_token_id=151937, image_col_id=151939,
           frame_start_token_id=151943, frame_end_token_id=151944)
# SigLIP 2 so400m/14 at 378 px (27 x 27 = 729 positions), 27 layers written
VIT = dict(model_type="molmo2", hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
           num_attention_heads=16, num_key_value_heads=16, head_dim=72,
           hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6,
           image_default_input_size=[378, 378], image_patch_size=14, image_num_pos=729)


def adapter(inter, text_hidden, **kw):
    base = dict(model_type="molmo2", vit_layers=[-3, -9], pooling_attention_mask=True,
                hidden_size=1152, num_attention_heads=16, num_key_value_heads=16, head_dim=72,
                hidden_act="silu", intermediate_size=inter, text_hidden_size=text_hidden)
    return {**base, **kw}


def text(hidden, layers, heads, kv, inter, vocab, **kw):
    base = dict(model_type="molmo2_text", hidden_size=hidden, num_attention_heads=heads,
                num_key_value_heads=kv, head_dim=128, vocab_size=vocab,
                additional_vocab_size=128, qkv_bias=False, num_hidden_layers=layers,
                intermediate_size=inter, hidden_act="silu", max_position_embeddings=36864,
                rope_theta=1000000.0, use_qk_norm=True, qk_norm_type="qwen3",
                layer_norm_eps=1e-6, norm_after=False, rope_scaling_layers=None)
    return {**base, **kw}


def wrapper(t, a, v=VIT, **kw):
    return dict(architectures=["Molmo2ForConditionalGeneration"], model_type="molmo2",
                auto_map={"AutoConfig": "configuration_molmo2.Molmo2Config"},
                torch_dtype="float32", tie_word_embeddings=False, **IDS,
                vit_config=v, adapter_config=a, text_config=t, **kw)


CONFIGS = {
    # Qwen3-8B's text model
    "molmo2-8b": wrapper(text(4096, 36, 32, 8, 12288, 151936), adapter(12288, 4096)),
    # Qwen3-4B's
    "molmo2-4b": wrapper(text(2560, 36, 32, 8, 9728, 151936), adapter(9728, 2560)),
    # OLMo 3 7B's: MHA, OLMo's whole-width q/k norms, norms after, its vocabulary
    "molmo2-o-7b": wrapper(text(4096, 32, 32, 32, 11008, 100278, qk_norm_type="olmo",
                                norm_after=True, rope_theta=500000.0,
                                max_position_embeddings=65536),
                           adapter(11008, 4096)),
    # small variants: a GQA pooling, positive ViT layers (fewer kept), a biased QKV, no q/k norm
    "tiny-molmo2": wrapper(
        text(256, 2, 4, 2, 512, 1000, head_dim=64, qkv_bias=True, use_qk_norm=False),
        adapter(384, 256, num_key_value_heads=2) | {"hidden_size": 128, "head_dim": 16,
                                                    "num_attention_heads": 8,
                                                    "vit_layers": [1, 2]},
        v=VIT | dict(hidden_size=128, intermediate_size=320, num_hidden_layers=6,
                     num_attention_heads=8, num_key_value_heads=8, head_dim=16,
                     image_default_input_size=[112, 112], image_num_pos=64)),
    "tiny-molmo2-olmo": wrapper(
        text(256, 2, 8, 4, 512, 1000, head_dim=32, qk_norm_type="olmo", norm_after=True),
        adapter(256, 256),
        v=VIT | dict(num_hidden_layers=10)),
    # a ViT of 2 KV heads, fewer than TP 4's and 8's ranks (vLLM keeps one a rank)
    "tiny-molmo2-vit-gqa": wrapper(
        text(256, 2, 8, 2, 512, 1000, head_dim=32, use_qk_norm=False),
        adapter(384, 256, num_key_value_heads=2) | {"hidden_size": 128, "head_dim": 16,
                                                    "num_attention_heads": 8,
                                                    "vit_layers": [1, 2]},
        v=VIT | dict(hidden_size=128, intermediate_size=320, num_hidden_layers=6,
                     num_attention_heads=8, num_key_value_heads=2, head_dim=16,
                     image_default_input_size=[112, 112], image_num_pos=64)),
}

for name, cfg in CONFIGS.items():
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
