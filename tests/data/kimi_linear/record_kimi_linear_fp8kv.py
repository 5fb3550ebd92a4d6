# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for Kimi Linear with an fp8 KV cache
(`--kv-cache-dtype fp8`: CacheConfig(cache_dtype="fp8")): each cache layer's spec (the KDA
states' shapes and dtypes too), the cache config's block sizes and the KVCacheConfig on given
memories, at TP 1 and one more TP, as record_kimi_linear.py's `planned` records them
-> fp8kv_answers.json, for tests/test_kimi_linear_fp8kv.py. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/kimi_linear/record_kimi_linear_fp8kv.py

The MLA backend stays kl_build's TRITON_MLA (it takes an fp8 cache): an H100 picks FLASHMLA
for an fp8 MLA cache (FLASH_ATTN_MLA, its first choice, takes none), whose kernel block 64
(TRITON_MLA's MultipleOf(16)) gives the same block size, since `_align_hybrid_block_size`
raises an MLA model's alignment to 128 either way, and the same spec; FlashMLA's module is
not built here ("vllm._flashmla_C is not available").
"""
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import record_kimi_linear as rk
b = rk.b
import vllm.config as vcfg

# config -> (max_model_len, [available bytes per rank, ...], the TP sizes)
CASES = {"tiny-kimi-linear": (4096, [64 << 20, 1 << 30], (1, 2)),
         "kimi-linear-48b-a3b": (1048576, [20 << 30], (1, 4))}


class Fp8CacheConfig(vcfg.CacheConfig):
    def __init__(self, **kw):
        super().__init__(cache_dtype="fp8", **kw)


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    vcfg.CacheConfig = Fp8CacheConfig   # (kl_build.build imports it from vllm.config)
    out = {"substitutions": b.SUBSTITUTIONS + [
        "CacheConfig(cache_dtype='fp8')"],
        "cases": {}}
    for name, (mml, availables, tps) in CASES.items():
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        case = out["cases"][name] = {"max_model_len": mml}
        for tp in tps:
            try:
                model, rows = rk.planned(cfg, mml, tp, availables)
            except Exception as e:
                case[f"tp{tp}"] = {"refused": f"{type(e).__name__}: {e}"[:400]}
                continue
            case[f"tp{tp}"] = rows
            del model
            print(name, tp, file=sys.stderr, flush=True)
    (HERE / "fp8kv_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
