# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 does with tiny-dsv4 under each --kv-cache-dtype on an
H100 (dsv4_build.py's build, CacheConfig(cache_dtype=...)): the cache dtype it runs and every
spec's page, or its refusal -> kv_cache_dtypes.json. From the project root:

    R=~/.cache/vllm-oracle
    flock /tmp/vllm-build.lock env HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 $R/venv/bin/python tests/data/deepseek_v4/record_dtypes.py
"""
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import dsv4_build as b
from vllm.config import (CacheConfig, DeviceConfig, KernelConfig, LoadConfig, ParallelConfig,
                         VllmConfig)

DTYPES = ("auto", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16")


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    cfg = json.loads((HERE / "tiny-dsv4.config.json").read_text())
    out = {}
    for dtype in DTYPES:
        def vllm_config(mc, prefix_caching=True, dtype=dtype):
            return VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                              cache_config=CacheConfig(enable_prefix_caching=prefix_caching,
                                                       cache_dtype=dtype),
                              kernel_config=KernelConfig(enable_jit_warmup=False),
                              device_config=DeviceConfig(device="cpu"),
                              load_config=LoadConfig(load_format="dummy", device="meta"))
        b.vllm_config = vllm_config
        try:
            _, vc, specs = b.build(b.model_config(cfg, 4096))
            out[dtype] = {"cache_dtype": vc.cache_config.cache_dtype,
                          "pages": {n: s.page_size_bytes for n, s in specs.items()}}
        except Exception as e:
            out[dtype] = {"refused": f"{type(e).__name__}: {e}"[:600]}
        print(dtype, out[dtype].get("cache_dtype") or out[dtype]["refused"][:200],
              file=sys.stderr, flush=True)
    (HERE / "kv_cache_dtypes.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
