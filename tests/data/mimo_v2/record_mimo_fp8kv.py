# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for MiMo-V2 with an fp8 KV cache
(`--kv-cache-dtype fp8`: CacheConfig(cache_dtype="fp8")): each KV cache layer's spec and
the KVCacheConfig on given memories, as record_mimo.py records them at TP 1
-> fp8kv_answers.json, for tests/test_mimo_v2_fp8kv.py. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/mimo_v2/record_mimo_fp8kv.py
"""
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import record_mimo as r
b = r.b
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ParallelConfig, VllmConfig)

# (not tiny-mimo-v2-var: its equal-width layers take plain FlashAttention, which on this CPU
# says "FlashAttention does not support fp8 kv-cache on this device"; an H100's FA3 does)
CASES = {"tiny-mimo-v2": (8192, [256 << 20, 1 << 30]), "mimo-v2-flash": (262144, [20 << 30])}


def vllm_config(mc, prefix_caching=True):
    return VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                      cache_config=CacheConfig(enable_prefix_caching=prefix_caching,
                                               cache_dtype="fp8"),
                      device_config=DeviceConfig(device="cpu"),
                      load_config=LoadConfig(load_format="dummy", device="meta"))


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    b.vllm_config = vllm_config         # (build() reads it from the module)
    out = {"substitutions": b.SUBSTITUTIONS + ["CacheConfig(cache_dtype='fp8')"], "cases": {}}
    for name, (mml, availables) in CASES.items():
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        try:
            model, vc, specs = b.build(b.model_config(cfg, mml))
        except Exception as e:
            out["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:400]}
            continue
        out["cases"][name] = {
            "max_model_len": mml, "cache_dtype": vc.cache_config.cache_dtype,
            "specs": [r.spec_row(n, s) for n, s in specs.items()],
            "planning": [r.planning(vc, specs, a) for a in availables]}
        del model
        print(name, file=sys.stderr, flush=True)
    (HERE / "fp8kv_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
