# ruff: noqa
"""Write this folder's configs (from the project root: /work/main/.venv/bin/python
tests/data/weights_census/transformers_rope/make_configs.py): the KV-spec census's config of
each text class vLLM 0.33 serves on its Transformers backend that kvcli does not size as a
pre-Llama block (`kvcore.models.classic_blocks`), made narrow (256 wide, 8 heads of 32, 2 KV
heads, MLP 512, experts 128 wide, vocabulary 1,024), its layers and per-layer lists kept."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
KV = json.loads((HERE.parents[1] / "kv_spec_census" / "answers.json").read_text())
ARCHS = ("ArceeForCausalLM", "CwmForCausalLM", "GlmForCausalLM", "HunYuanDenseV1ForCausalLM",
         "HunYuanMoEV1ForCausalLM", "Jais2ForCausalLM", "OlmoForCausalLM", "Olmo2ForCausalLM",
         "Olmo3ForCausalLM", "FlexOlmoForCausalLM", "SeedOssForCausalLM", "SmolLM3ForCausalLM",
         "VaultGemmaForCausalLM")

if __name__ == "__main__":
    for arch in ARCHS:
        c = dict(KV["architectures"][arch]["config"])
        c.update(vocab_size=1024, hidden_size=256, intermediate_size=512,
                 num_attention_heads=8, num_key_value_heads=2)
        if "head_dim" in c:
            c["head_dim"] = 32
        for k in ("moe_intermediate_size", "expert_intermediate_size"):
            if isinstance(c.get(k), int):
                c[k] = 128
        # (the recorder serves 4,096 tokens: OLMo's and HunYuan's census configs hold fewer)
        c["max_position_embeddings"] = max(c.get("max_position_embeddings") or 0, 4096)
        for k in ("pad_token_id", "bos_token_id", "eos_token_id"):
            if isinstance(c.get(k), int) and c[k] >= 1024:
                c[k] = 1
        (HERE / f"tiny-{c['model_type']}.config.json").write_text(json.dumps(c, indent=1) + "\n")
