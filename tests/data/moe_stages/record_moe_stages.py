# ruff: noqa
"""Dev tool (not a test): whether vLLM 0.33 builds a pipeline stage holding none of a MoE
class's MoE layers, per family -> answers.json and <case>.config.json, for
tests/test_moe_stages.py. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/moe_stages/record_moe_stages.py [CASE ...]

Each case: the census's tiny config of the architecture (../kv_spec_census/census_configs.py:
the config class's defaults, the text model cut to 8 layers) with the text model's keys below
changed so that a stage holds only dense layers (or no layer), written to <case>.config.json;
each stage built at TP 1 as ../refused_lifted/pp/record_lifted_pp.py builds one (the pipeline
group's size and rank set), stage 0 first; kept: the stages built, or the error that stopped
one (`refused`, `stage_refused`: its index).
"""
import json, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "refused_lifted"))
import record_refused as rr     # (imports dsv4_build, record_dsv4 and the stand-ins)
import census_configs as cc     # (imported by ../kv_spec_census/record_kv_specs.py)
from vllm.distributed import parallel_state
from vllm.distributed.utils import get_pp_indices

b = rr.b
D2 = {"first_k_dense_replace": 2}
# case -> (architecture, the text model's keys changed, PP size)
CASES = {
    "mixtral-2-layers": ("MixtralForCausalLM", {"num_hidden_layers": 2}, 4),
    "mixtral": ("MixtralForCausalLM", {}, 4),
    "qwen3-moe-mlp-only": ("Qwen3MoeForCausalLM", {"mlp_only_layers": [0, 1]}, 4),
    "qwen3-moe-step4": ("Qwen3MoeForCausalLM", {"decoder_sparse_step": 4}, 4),
    "qwen3-moe-step2": ("Qwen3MoeForCausalLM", {"decoder_sparse_step": 2}, 4),
    "qwen3-next-mlp-only": ("Qwen3NextForCausalLM", {"mlp_only_layers": [0, 1]}, 4),
    "qwen3-5-moe-text-mlp-only": ("Qwen3_5MoeForCausalLM", {"mlp_only_layers": [0, 1]}, 4),
    "qwen3-5-moe-mlp-only": ("Qwen3_5MoeForConditionalGeneration",
                             {"mlp_only_layers": [0, 1]}, 4),
    "qwen3-vl-moe-mlp-only": ("Qwen3VLMoeForConditionalGeneration",
                              {"mlp_only_layers": [0, 1]}, 4),
    "interns1-pro-mlp-only": ("InternS1ProForConditionalGeneration",
                              {"mlp_only_layers": [0, 1]}, 4),
    "glm4-moe-dense2": ("Glm4MoeForCausalLM", D2, 4),
    "glm4-moe-lite-dense2": ("Glm4MoeLiteForCausalLM", D2, 4),
    "glm4v-moe-dense2": ("Glm4vMoeForConditionalGeneration", D2, 4),
    "hy-v3-dense2": ("HYV3ForCausalLM", D2, 4),
    "afmoe-dense2": ("AfmoeForCausalLM", {"num_dense_layers": 2}, 4),
    # (a config file's: ../lfm2's tiny LFM2-MoE, 6 layers, its first 2 dense; openPangu Ultra's
    # tiny, 3 layers, its first dense; Param2MoE's, written here)
    "lfm2-moe-dense2": ("../lfm2/tiny-lfm2-moe.config.json", {}, 4),
    "pangu-ultra-dense1": ("../weights_census/openpangu/tiny-pangu-ultra-moe.config.json", {},
                           3),
    "param2moe-dense1": (None, {}, 4),
    "qwen3-5-moe-2-layers": ("Qwen3_5MoeForConditionalGeneration",
                             {"num_hidden_layers": 2}, 4),
    "qwen3-5-moe-text-2-layers": ("Qwen3_5MoeForCausalLM", {"num_hidden_layers": 2}, 4),
    # (transformers' NemotronHConfig keeps both spellings of the pattern: given alike)
    "nemotron-h-moe-late": ("NemotronHForCausalLM", {
        "hybrid_override_pattern": "M-M*MEME", "num_hidden_layers": 8, "layers_block_type": [
            "linear_attention", "mlp", "linear_attention", "full_attention",
            "linear_attention", "moe", "linear_attention", "moe"]}, 4),
    # (the classes that log a warning and go on)
    "deepseek-v3-dense2": ("DeepseekV3ForCausalLM", D2, 4),
    # (untied: Ernie4_5_MoeForCausalLM ties the head on every stage, and a stage without it
    # fails on that first)
    "ernie45-moe-start2": ("Ernie4_5_MoeForCausalLM", {"moe_layer_start_index": 2,
                                                       "tie_word_embeddings": False}, 4),
    # (tied, every layer MoE: the head's tie on a stage without the head, at PP 2)
    "ernie45-moe-tied": ("Ernie4_5_MoeForCausalLM", {"tie_word_embeddings": True}, 2),
    "llama4-step4": ("Llama4ForCausalLM", {"interleave_moe_layer_step": 4}, 4),
    "axk1-dense2": ("AXK1ForCausalLM", D2, 4),
}


# Param2MoE's checkpoints bring their config class as remote code: a PretrainedConfig holding
# these keys (those param2moe.py reads), 4 layers, the first dense
PARAM2MOE = {"architectures": ["Param2MoEForCausalLM"], "model_type": "param2moe",
             "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 512,
             "moe_intermediate_size": 128, "moe_shared_expert_intermediate_size": 128,
             "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 1,
             "first_k_dense_replace": 1, "vocab_size": 1000, "max_position_embeddings": 4096,
             "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "score_function": "sigmoid",
             "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
             "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def register():
    from transformers import AutoConfig, PretrainedConfig
    sys.path.insert(0, str(HERE.parent / "weights_census" / "openpangu"))
    import pangu_config     # (openPangu Ultra's, registered on import)

    class Param2MoEConfig(PretrainedConfig):
        model_type = "param2moe"
    AutoConfig.register("param2moe", Param2MoEConfig, exist_ok=True)


def base_config(arch, reverse):
    if arch is None:
        return json.loads(json.dumps(PARAM2MOE)), None
    if arch.endswith(".json"):
        return json.loads((HERE / arch).read_text()), None
    return cc.make_config(arch, reverse)


def set_pp(size, rank):
    """The pipeline group's size and rank, as ../weights_census/longcat_pp's `set_pp`."""
    pp = parallel_state._PP
    pp.world_size, pp.rank_in_group, pp.ranks, pp.rank = size, rank, list(range(size)), rank


def refused(e):
    return textwrap.wrap(f"{type(e).__name__}: {e}"[:600], 90)


def record(name, reverse):
    arch, keys, pp = CASES[name]
    cfg, why = base_config(arch, reverse)
    if cfg is None:
        return {"architecture": arch, "no_config": why}
    arch = cfg["architectures"][0]
    t = cc._text_dict(cfg)
    # (the per-layer lists cut with the layers)
    if "num_hidden_layers" in keys and "num_hidden_layers" in t:
        for k, v in list(t.items()):
            if isinstance(v, list) and len(v) == t["num_hidden_layers"]:
                t[k] = v[:keys["num_hidden_layers"]]
    t.update(keys)
    (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
    b.current_platform.get_attn_backend_cls = rr.pick_backend
    # (Nemotron-H's layers: its pattern's)
    n = next((t[k] for k in cc.LAYER_KEYS if isinstance(t.get(k), int)), None) or len(
        t["hybrid_override_pattern"])
    out = {"architecture": arch, "changed": keys, "pp": pp, "num_layers": n, "stages": []}
    try:
        for rank in range(pp):
            t0 = time.perf_counter()
            set_pp(pp, rank)
            model, vc, sp = b.build(b.model_config(cfg, 4096), 1, 0)
            out["stages"].append({"layers": list(get_pp_indices(n, rank, pp)),
                                  "kv_layers": len(sp)})
            del model
            print(name, "stage", rank, f"{time.perf_counter() - t0:.1f} s", file=sys.stderr,
                  flush=True)
    except Exception as e:
        out["stage_refused"], out["refused"] = len(out["stages"]), refused(e)
        print(name, "refused", e, file=sys.stderr, flush=True)
    set_pp(1, 0)
    return out


def main():
    b.rc.rqn.rmm_main_env()
    rr.stand_ins.register()
    register()
    reverse = cc._reverse_auto_mappings()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    for name in sys.argv[1:] or list(CASES):
        answers["cases"][name] = record(name, reverse)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
