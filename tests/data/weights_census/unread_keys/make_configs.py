# ruff: noqa
"""Write this folder's configs (from the project root:
/work/main/.venv/bin/python tests/data/weights_census/unread_keys/make_configs.py): tiny
Laguna, Seed-OSS and Apertus configs setting the keys kvcli did not read. (A config's float32
is served in bfloat16 by vLLM's auto dtype: record_towers.py adds --dtype float32 instead.)"""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAGUNA = HERE.parent / "layer_heads_tp" / "tiny-laguna-heads.config.json"
KV = json.loads((HERE.parents[1] / "kv_spec_census" / "answers.json").read_text())


def small(arch, **over):
    """The KV-spec census's config of `arch` cut small (4 layers, 256 wide, 8 heads of 32)."""
    c = dict(KV["architectures"][arch]["config"])
    c.update(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=2, head_dim=32,
             max_position_embeddings=4096)
    c.update(over)
    return c


def main():
    lag = json.loads(LAGUNA.read_text())
    lag.pop("num_attention_heads_per_layer")     # (16 heads on every layer: TP 8 builds)
    out = {
        "tiny-laguna-swa-sinks": {**lag, "swa_attention_sink_enabled": True},
        "tiny-seed-oss-out-bias": small("SeedOssForCausalLM", attention_bias=False,
                                        attention_out_bias=True),
        "tiny-seed-oss-all-bias": small("SeedOssForCausalLM", attention_bias=True,
                                        attention_out_bias=True),
        # (its llama3 RoPE's original 8,192 positions below the table's)
        "tiny-apertus": small("ApertusForCausalLM", head_dim=None,
                              max_position_embeddings=65536),
        "tiny-apertus-fp16": small("ApertusForCausalLM", head_dim=None, dtype="float16",
                                   torch_dtype="float16", max_position_embeddings=65536),
    }
    # (an fp8 block-quantised Laguna: g_proj takes the quant_config; 1,024 wide, 16 heads of
    # 64, experts 512 wide; its gate one output a head's channel, then one a head)
    fp8 = {**lag, "hidden_size": 1024, "head_dim": 64, "intermediate_size": 1024,
           "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
           "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic",
                                   "fmt": "e4m3", "weight_block_size": [128, 128]}}
    out["tiny-laguna-fp8-gate-per-element"] = {**fp8, "gating": "per-element"}
    out["tiny-laguna-fp8-gate-per-head"] = {**fp8, "gating": True}
    for name, c in out.items():
        if c.get("head_dim", 0) is None:
            del c["head_dim"]
        (HERE / f"{name}.config.json").write_text(json.dumps(c, indent=1) + "\n")


if __name__ == "__main__":
    main()
