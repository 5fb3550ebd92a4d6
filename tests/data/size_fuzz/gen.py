# ruff: noqa
"""Dev tool (not a test): draw seeded, valid-looking variations of the KV-spec census's
configs (../kv_spec_census/answers.json: the rows vLLM built) with serving options, for
record.py (vLLM's answers) and compare.py (kvcli's). Plain Python, no vLLM:

    python3 tests/data/size_fuzz/gen.py --seed 0 --n 720 > /tmp/size_fuzz/cases.jsonl

Each line: {"id", "arch", "seed", "config", "options": {tp, kv_cache_dtype, max_model_len,
block_size, available}, "mutated": [the keys changed]}. A field is drawn only where the family's
config has it (so each family varies what its model file reads), each with probability P; the
layer count is cut to 1..6 with every per-layer list, string and index set cut with it.
"""
import argparse, copy, json, random, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROWS = json.loads((HERE.parent / "kv_spec_census" / "answers.json").read_text())["architectures"]
# families the census could not build from their config class's defaults: published-shape
# configs typed in elsewhere under tests/data (as rows: {"config", "specs": the file's name})
EXTRA = {"NemotronHForCausalLM": "mamba/nemotron-nano-9b-v2.config.json",
         "Lfm2ForCausalLM": "lfm2/tiny-lfm2.config.json",
         "Lfm2MoeForCausalLM": "lfm2/tiny-lfm2-moe.config.json",
         # (the classes kvcli sized since seed 0; record.py registers their stand-in configs)
         "MiMoV2FlashForCausalLM": "mimo_v2/tiny-mimo-v2.config.json",
         "KimiLinearForCausalLM": "kimi_linear/tiny-kimi-linear.config.json",
         "SarvamMLAForCausalLM": "refused_lifted/tiny-sarvam-mla.config.json",
         "LongcatFlashNgramForCausalLM": "refused_lifted/tiny-longcat-ngram.config.json",
         "Rnj1ForCausalLM": "refused_lifted/tiny-rnj1.config.json",
         "DomynEdgeForCausalLM": "refused_lifted/tiny-domyn-edge.config.json",
         "PanguProMoEV2ForCausalLM": "refused_lifted/tiny-pangu-v2-sinkv.config.json"}
for _arch, _path in EXTRA.items():
    ROWS[_arch] = {"config": json.loads((HERE.parent / _path).read_text()), "specs": _path}
P = 0.45
# the most served families: drawn FAVOURED_WEIGHT times as often
FAVOURED = {
    "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3nForCausalLM", "Gemma4ForCausalLM",
    "MistralForCausalLM", "MixtralForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM", "Glm4ForCausalLM", "Glm4MoeForCausalLM", "GptOssForCausalLM",
    "Phi3ForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM",
    "GraniteMoeHybridForCausalLM", "NemotronHForCausalLM", "JambaForCausalLM",
    "FalconH1ForCausalLM", "MiniMaxM2ForCausalLM", "KimiLinearForCausalLM",
    "Step3p5ForCausalLM", "Ernie4_5ForCausalLM", "Ernie4_5_MoeForCausalLM",
    "HunYuanDenseV1ForCausalLM", "HunYuanMoEV1ForCausalLM", "Olmo2ForCausalLM",
    "Olmo3ForCausalLM", "Cohere2ForCausalLM", "Exaone4ForCausalLM", "SmolLM3ForCausalLM",
    "Mamba2ForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Glm4MoeLiteForCausalLM"}
FAVOURED_WEIGHT = 5
TEXT_KEYS = ("text_config", "llm_config", "language_config")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
TOPK_KEYS = ("num_experts_per_tok", "moe_k", "moe_topk", "moe_top_k", "top_k_experts")
SHARED_KEYS = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts")
STATE_KEYS = ("mamba_d_state", "state_size", "ssm_state_size")
CONV_KEYS = ("mamba_d_conv", "conv_kernel", "linear_conv_kernel_dim", "conv_L_cache")


def text_config(cfg):
    for k in TEXT_KEYS:
        if isinstance(cfg.get(k), dict):
            return cfg[k]
    t = cfg.get("thinker_config", {}).get("text_config") if isinstance(
        cfg.get("thinker_config"), dict) else None
    return t if isinstance(t, dict) else cfg


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def cut_layers(tc, old, new, changed):
    """Every per-layer field cut to ``new`` layers (lists, strings, index sets, counts)."""
    for k, v in list(tc.items()):
        if isinstance(v, list) and len(v) == old and k not in ("eos_token_id",):
            tc[k] = v[:new]
        elif isinstance(v, str) and len(v) == old and k.endswith("pattern"):
            tc[k] = v[:new]          # (Nemotron-H's hybrid_override_pattern)
        elif isinstance(v, list) and k in ("mlp_only_layers", "no_rope_layers_idx",
                                           "attn_layer_indices", "moe_layers"):
            tc[k] = [i for i in v if isinstance(i, int) and i < new]
        elif k == "per_layer_config" and isinstance(v, dict):
            tc[k] = {i: o for i, o in v.items() if int(i) < new}   # (Domyn Edge's overrides)
        elif k == "moe_layers_enum" and isinstance(v, str):
            tc[k] = ",".join(i for i in v.split(",") if i.strip() and int(i) < new)
    for k in ("num_kv_shared_layers",):
        if isinstance(tc.get(k), int) and tc[k] >= new:
            tc[k] = max(0, new - 1)
            changed.append(k)
    for k in ("first_k_dense_replace", "max_window_layers", "moe_layer_start_index"):
        if isinstance(tc.get(k), int) and tc[k] > new:
            tc[k] = new
    if isinstance(tc.get("moe_layer_end_index"), int):
        tc["moe_layer_end_index"] = min(tc["moe_layer_end_index"], new - 1)


def draw_layers(r, tc, changed):
    key = next((k for k in LAYER_KEYS if isinstance(tc.get(k), int)), None)
    if key is None:
        return
    old = tc[key]
    new = r.randint(1, min(6, old))
    tc[key] = new
    changed.append(key)
    cut_layers(tc, old, new, changed)


def draw_heads(r, tc, changed):
    if not isinstance(tc.get("num_attention_heads"), int):
        return
    h = r.choice([2, 4, 8, 16, 32])
    tc["num_attention_heads"] = h
    changed.append("num_attention_heads")
    for k in ("num_key_value_heads", "multi_query_group_num", "num_attention_groups"):
        if isinstance(tc.get(k), int):
            tc[k] = r.choice(divisors(h))
            changed.append(k)
    explicit = isinstance(tc.get("head_dim"), int)
    if explicit and r.random() < P:
        tc["head_dim"] = r.choice([64, 128, 256])
        changed.append("head_dim")
    if isinstance(tc.get("hidden_size"), int):
        tc["hidden_size"] = (r.choice([256, 512, 768, 1024, 2048]) if explicit
                             else h * r.choice([64, 128]))
        changed.append("hidden_size")


def maybe(r, tc, key, values, changed):
    if key in tc and not isinstance(tc[key], (dict, list)) and r.random() < P:
        tc[key] = r.choice(values) if isinstance(values, list) else values(tc[key])
        changed.append(key)


def draw_moe(r, tc, changed):
    key = next((k for k in EXPERT_KEYS if isinstance(tc.get(k), int) and tc[k] > 0), None)
    if key is None or r.random() > 0.7:
        return
    e = r.choice([4, 8, 16, 32, 64])
    tc[key] = e
    changed.append(key)
    for k in TOPK_KEYS:
        if isinstance(tc.get(k), int):
            tc[k] = r.choice([1, 2, min(4, e), min(8, e)])
            changed.append(k)
    if isinstance(tc.get("n_group"), int) and tc["n_group"] > 1:
        tc["n_group"] = r.choice([d for d in divisors(e) if d <= 8])
        tc["topk_group"] = r.randint(1, tc["n_group"])
        changed += ["n_group", "topk_group"]
    for k in SHARED_KEYS:
        maybe(r, tc, k, [0, 1, 2] if tc.get(k) else [1, 2], changed)
    for k in ("moe_intermediate_size", "shared_expert_intermediate_size", "moe_ffn_hidden_size"):
        maybe(r, tc, k, [128, 256, 384, 768, 1024, 1408], changed)
    maybe(r, tc, "first_k_dense_replace", lambda v: r.randint(0, 2), changed)
    maybe(r, tc, "decoder_sparse_step", [1, 2], changed)
    maybe(r, tc, "moe_layer_freq", [1, 2], changed)
    maybe(r, tc, "interleave_moe_layer_step", [1, 2], changed)


def draw_mla(r, tc, changed):
    if not isinstance(tc.get("kv_lora_rank"), int):
        return
    maybe(r, tc, "kv_lora_rank", [64, 128, 256, 512], changed)
    maybe(r, tc, "q_lora_rank", [None, 128, 384, 1536], changed)
    maybe(r, tc, "qk_rope_head_dim", [32, 64], changed)
    maybe(r, tc, "qk_nope_head_dim", [64, 128], changed)
    maybe(r, tc, "v_head_dim", [64, 128], changed)
    if "qk_head_dim" in tc and isinstance(tc.get("qk_rope_head_dim"), int):
        tc["qk_head_dim"] = tc["qk_rope_head_dim"] + tc["qk_nope_head_dim"]


def draw_states(r, tc, changed):
    for k in STATE_KEYS:
        maybe(r, tc, k, [16, 32, 64, 128], changed)
    for k in CONV_KEYS:
        maybe(r, tc, k, [2, 3, 4], changed)
    if isinstance(tc.get("linear_num_key_heads"), int) and r.random() < P:
        k = r.choice([1, 2, 4, 8])
        tc["linear_num_key_heads"] = k
        tc["linear_num_value_heads"] = k * r.choice([1, 2, 4])
        changed += ["linear_num_key_heads", "linear_num_value_heads"]
    maybe(r, tc, "linear_key_head_dim", [64, 128], changed)
    maybe(r, tc, "linear_value_head_dim", [64, 128], changed)


def draw_windows(r, tc, changed):
    if isinstance(tc.get("sliding_window"), int):
        maybe(r, tc, "sliding_window", [64, 128, 500, 1024, 4096], changed)
    lt = tc.get("layer_types")
    if isinstance(lt, list) and len(set(lt)) > 1 and r.random() < P:
        kinds = sorted(set(lt))
        tc["layer_types"] = [r.choice(kinds) for _ in lt]
        changed.append("layer_types")


def draw_rest(r, tc, changed):
    maybe(r, tc, "intermediate_size",
          lambda v: r.choice([128, 64, 8]) * r.randint(4, 64), changed)
    maybe(r, tc, "vocab_size", lambda v: r.choice([64, 1, 7]) * r.randint(1000, 3000), changed)
    maybe(r, tc, "tie_word_embeddings", lambda v: not v, changed)
    for k in ("attention_bias", "mlp_bias", "qkv_bias", "add_qkv_bias"):
        maybe(r, tc, k, lambda v: not v, changed)
    maybe(r, tc, "max_position_embeddings", [512, 2048, 4096, 32768, 131072], changed)
    maybe(r, tc, "rope_theta", [10000.0, 500000.0, 1000000.0], changed)
    rp = tc.get("rope_parameters")
    if isinstance(rp, dict) and "rope_theta" in rp and r.random() < P:
        rp["rope_theta"] = r.choice([10000.0, 500000.0, 1000000.0])
        changed.append("rope_parameters.rope_theta")


def draw_options(r, cfg, tc):
    mla = isinstance(tc.get("kv_lora_rank"), int)
    return {"tp": r.choice([1, 1, 1, 2, 2, 2, 4, 4, 8]),
            "kv_cache_dtype": r.choice(["auto", "auto", "auto", "fp8"]),
            "max_model_len": r.choice([None, None, None, 256, 1000, 4096, 16384]),
            # (an MLA model's block size follows the backend vLLM picks on the GPU: named)
            "block_size": (r.choice([64, 64, 32, 128]) if mla
                           else r.choice([None, None, None, 16, 32, 64, 128])),
            "available": r.choice([256 << 20, 1 << 30, 4 << 30, 3 * (1 << 30) + 12345])}


def draw(arch, seed):
    r = random.Random(seed)
    cfg = copy.deepcopy(ROWS[arch]["config"])
    tc = text_config(cfg)
    changed = []
    draw_layers(r, tc, changed)
    if r.random() < 0.6:
        draw_heads(r, tc, changed)
    draw_moe(r, tc, changed)
    draw_mla(r, tc, changed)
    draw_states(r, tc, changed)
    draw_windows(r, tc, changed)
    draw_rest(r, tc, changed)
    if r.random() < 0.3:
        dt = r.choice(["float16", "float32", "bfloat16"])
        for c in {id(cfg): cfg, id(tc): tc}.values():
            c["torch_dtype"] = c["dtype"] = dt
        changed.append("dtype")
    return {"arch": arch, "seed": seed, "config": cfg, "options": draw_options(r, cfg, tc),
            "mutated": changed}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=720)
    a = ap.parse_args()
    built = [k for k, v in ROWS.items() if "specs" in v]
    weights = [FAVOURED_WEIGHT if k in FAVOURED else 1 for k in built]
    r = random.Random(a.seed)
    # every built architecture once, then the rest drawn by weight
    archs = built + r.choices(built, weights, k=max(0, a.n - len(built)))
    for i, arch in enumerate(archs[:a.n]):
        case = draw(arch, a.seed * 1_000_003 + i)
        print(json.dumps({"id": f"s{a.seed}-{i:04d}", **case}))


if __name__ == "__main__":
    main()
