# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds of DeepSeek-V3.2 (and GLM-5, the same sparse-MLA
class family) on each pipeline stage (TP 1 and 2, PP 2 and 4, every stage) -> answers.json, for
tests/test_dsv32_pp.py.

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/dsv32_pp/record_dsv32_pp.py [CASE ...]

../step3_pp/record_step3_pp.py's way (../longcat_pp's `set_pp`, ../record_census.py's `build`
and substitutions, the sparse-MLA backend and meta device `record` sets for a config with
index_topk). Per stage: the decoder layers (`get_pp_indices`), the parameters' bytes by dtype,
the buffers, and each attention layer's KV cache spec as the built layer gives it
(`get_kv_cache_spec`: the MLA cache and the indexer's key cache), by layer name.
"""
import dataclasses, importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_longcat_pp",
                                              HERE.parent / "longcat_pp" / "record_longcat_pp.py")
rlp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rlp)
rc, set_pp = rlp.rc, rlp.set_pp
import torch
from vllm.config import set_current_vllm_config
from vllm.distributed import parallel_state
from vllm.distributed.utils import get_pp_indices

PPS = (2, 4)
TPS = (1, 2)
# (../quant2's configs: DeepSeek-V3.2's 4 layers (3 dense, 1 MoE) as written, fp8, and without
# its quantization_config; GLM-5's fp8 block config)
CASES = {"deepseek-v3.2-l4": ("deepseek-v3.2-l4-fp8", True),
         "deepseek-v3.2-l4-fp8": ("deepseek-v3.2-l4-fp8", False),
         "glm-5-fp8-block": ("glm-5-fp8-block", False)}


def config(name):
    base, plain = CASES[name]
    cfg = json.loads((HERE.parent / "quant2" / f"{base}.config.json").read_text())
    if plain:
        cfg.pop("quantization_config")
    return cfg


def spec_record(s):
    out = {"class": type(s).__name__, "page_size_bytes": s.page_size_bytes}
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        out[f.name] = str(v) if isinstance(v, torch.dtype) else v
    return out


def build_with_specs(d, mc, tp):
    """../record_census.py's `build`, and the stage's KV cache specs."""
    captured = {}
    orig = rc.initialize_model

    def init(vc):
        model = orig(vc)
        with set_current_vllm_config(vc):
            for name, layer in vc.compilation_config.static_forward_context.items():
                # (the attention layers; the context holds the MoE runners too)
                s = layer.get_kv_cache_spec(vc) if hasattr(layer, "get_kv_cache_spec") else None
                if s is not None:
                    captured[name] = spec_record(s)
        return model

    rc.initialize_model = init
    try:
        rec = rc.build(d, mc, tp, 0, False)
    finally:
        rc.initialize_model = orig
    rec["kv_specs"] = captured
    return rec


def main():
    rc.rqn.rmm_main_env()
    backend = rc.AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE
    rc.current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    rc.current_platform.device_type = "meta"
    # (../record_census.py's SUBSTITUTIONS by name: their lines run past 100 characters)
    out = {"vllm_version": rc.vllm.__version__, "substitutions": [
        "../record_census.py's SUBSTITUTIONS", "pipeline group: size and rank set",
        "as set_tp sets the TP group's", "backend FLASH_ATTN_MLA_SPARSE",
        "the platform's device_type meta"], "cases": {}}
    group = parallel_state._PP
    saved = (group.world_size, group.rank_in_group, group.ranks, group.rank)
    path = HERE / "answers.json"
    if path.exists():       # (the cases not named kept)
        out["cases"] = json.loads(path.read_text())["cases"]
    for name in sys.argv[1:] or CASES:
        cfg = config(name)
        d = Path(tempfile.mkdtemp())
        (d / "config.json").write_text(json.dumps(cfg))
        mc = rc.ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
        n = cfg["num_hidden_layers"]
        case = out["cases"][name] = {"dtype": rc.rdm.dt(mc.dtype),
                                     "quantization": mc.quantization}
        for tp in TPS:
            for pp in PPS:
                stages = []
                for rank in range(pp):
                    set_pp(pp, rank)
                    try:
                        rec = build_with_specs(d, mc, tp)
                    except Exception as e:
                        rec = {"refused": f"{type(e).__name__}: {e}"[:400]}
                    rec["layers"] = list(get_pp_indices(n, rank, pp))
                    stages.append(rec)
                    print(name, f"TP {tp} PP {pp} stage {rank}", rec["layers"],
                          rec.get("refused", "ok"), file=sys.stderr, flush=True)
                case[f"tp{tp}-pp{pp}"] = stages
        group.world_size, group.rank_in_group, group.ranks, group.rank = saved
    rc.set_tp(1, 0)
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
