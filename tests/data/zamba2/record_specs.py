"""Dev tool (not a test, not run by CI): vLLM 0.33.0's KV cache specs, groups and pool for the
Zamba2 configs in this folder, at TP 1 and 2 (-> specs.json). Zamba2ForCausalLM is built on the
meta device as ../kv_spec_census/record_kv_specs.py builds it (imported: its substitutions,
the platform's hybrid block-size alignment), its specs collected as the GPU runner collects
them (`attn_utils.get_kv_cache_spec`), then vLLM's `get_kv_cache_groups` and planning over them
(../vllm_planning.py) in 4 GiB.

    R=~/.cache/vllm-oracle; ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1200 $R/venv/bin/python tests/data/zamba2/record_specs.py
"""
# ruff: noqa
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))      # vllm_planning.py
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rk)              # vLLM imported, every substitution applied
from vllm_planning import plan, planning_config
import torch, vllm

MML = 4096
AVAILABLE = 4 * 2**30


def build(cfg, tp):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = rk.ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=MML)
    rk.current_platform.get_attn_backend_cls = (
        lambda *a, **k: rk.AttentionBackendEnum.FLASH_ATTN.get_path())
    pc = rk.ParallelConfig()
    pc.tensor_parallel_size = tp          # (the state shapes read it; no workers start)
    vc = rk.VllmConfig(model_config=mc, parallel_config=pc, cache_config=rk.CacheConfig(),
                       device_config=rk.DeviceConfig(device="cpu"),
                       load_config=rk.LoadConfig(load_format="dummy", device="meta"))
    cc = vc.cache_config
    rk.abstract.get_mamba_prefill_checkpoint_alignment = lambda vc: 1
    rk.Platform._align_hybrid_block_size(vc, rk.FlashAttentionBackend)
    rk.rc.set_tp(tp, 0)
    with rk.set_current_vllm_config(vc), rk.set_default_torch_dtype(mc.dtype), \
            torch.device("meta"):
        rk.initialize_model(vc)
        specs = rk.attn_utils.get_kv_cache_spec(vc)
    rk.rc.set_tp(1, 0)
    c = planning_config(max_model_len=MML, max_num_batched_tokens=8192,
                        max_in_flight_tokens=16384, mamba_cache_mode=cc.mamba_cache_mode)
    groups, kc, numbers = plan(c, dict(specs), AVAILABLE)
    return {"is_hybrid": mc.is_hybrid, "prefix_caching_by_default": mc.is_prefix_caching_supported,
            "enable_prefix_caching": cc.enable_prefix_caching,
            "mamba_cache_mode": cc.mamba_cache_mode, "block_size": cc.block_size,
            "specs": [rk.spec_json(n, s) for n, s in specs.items()],
            "groups": [{"type": type(g.kv_cache_spec).__name__, "layers": list(g.layer_names),
                        "block_size": g.kv_cache_spec.block_size,
                        "page_size_bytes": g.kv_cache_spec.page_size_bytes} for g in groups],
            "tensors": [{"size": t.size, "layers": list(t.layers)}
                        for t in kc.kv_cache_tensors],
            "available_bytes": AVAILABLE, **numbers}


def main():
    rk.rc.rqn.rmm_main_env()
    out = {"vllm_version": vllm.__version__, "torch": torch.__version__,
           "substitutions": rk.SUBSTITUTIONS, "max_model_len": MML, "cases": {}}
    for p in sorted(HERE.glob("*.config.json")):
        cfg = json.loads(p.read_text())
        out["cases"][p.name] = case = {}
        for tp in (1, 2):
            try:
                case[str(tp)] = build(cfg, tp)
            except Exception as e:
                case[str(tp)] = {"refused": f"{type(e).__name__}: {e}"[:400]}
            print(p.name, tp, "refused" if "refused" in case[str(tp)] else "ok", file=sys.stderr)
        (HERE / "specs.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
