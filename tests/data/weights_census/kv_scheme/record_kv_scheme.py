"""Record the KV cache dtype vLLM 0.33 gives each attention layer of the checkpoints here
(`*.config.json`, written by make_kv_cases.py) for `--kv-cache-dtype auto` and `fp8_e5m2`
(-> answers.json): EngineArgs' resolve_kv_cache_dtype_string, then the model built at TP 1 on
the meta device with a CacheConfig of that dtype (as create_engine_config makes it), and after
the build the CacheConfig's cache_dtype and every attention layer's kv_cache_dtype, by class;
or vLLM's refusal.

A development tool, never run by the tests. It imports ../int_quant/record_int_quant.py and
../modelopt/record_modelopt.py for their substitutions (an H100's platform, no kernel chosen:
listed in answers.json; they leave the attention layers' dtypes alone). From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 900 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/kv_scheme/record_kv_scheme.py [CASE ...]
"""
# ruff: noqa
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


riq = _load("record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
rmo = _load("record_modelopt", HERE.parent / "modelopt" / "record_modelopt.py")
rc = riq.rc

import torch
import vllm
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.layers.attention import Attention
from vllm.model_executor.layers.attention.mla_attention import MLAAttention
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import resolve_kv_cache_dtype_string, set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum

from vllm.v1.attention.backends import flash_attn as _fa

KV_DTYPES = ("auto", "fp8_e5m2")
# An H100's FlashAttention is FA3, which takes an fp8_e4m3 cache (fa_utils.py
# flash_attn_supports_kv_cache_dtype, SM 9.0) and never fp8_e5m2: for fp8_e5m2 vLLM picks
# another backend (TRITON_ATTN here, as the CPU's build cannot ask FlashInfer); the layer's
# kv_cache_dtype and its quant method do not depend on which.
_fa.flash_attn_supports_kv_cache_dtype = lambda d="fp8_e4m3", **k: d != "fp8_e5m2"
SUBSTITUTIONS = ["FLASH_ATTN: FA3 on SM 9.0 (an fp8_e4m3 cache supported, fp8_e5m2 not); "
                 "fp8_e5m2 on TRITON_ATTN (MLA: TRITON_MLA)"]


def one(cfg, kv_cache_dtype):
    mla = bool(cfg.get("kv_lora_rank"))
    backend = (AttentionBackendEnum.TRITON_MLA if mla else AttentionBackendEnum.TRITON_ATTN
               if kv_cache_dtype == "fp8_e5m2" else AttentionBackendEnum.FLASH_ATTN)
    current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    resolved = resolve_kv_cache_dtype_string(kv_cache_dtype, mc)
    cache = CacheConfig(cache_dtype=resolved)
    rc.set_tp(1, 0)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(), cache_config=cache,
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    out = {"resolved": resolved}
    try:
        with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), \
                torch.device("meta"):
            model = initialize_model(vc)
    except Exception as e:
        return {**out, "refused": f"{type(e).__name__}: {e}"[:600]}
    layers = {}
    for name, m in model.named_modules():
        if isinstance(m, (Attention, MLAAttention)):
            key = f"{type(m).__name__} {m.kv_cache_dtype}"
            layers[key] = layers.get(key, 0) + 1
    return {**out, "cache_dtype_after_build": vc.cache_config.cache_dtype,
            "layers": dict(sorted(layers.items()))}


def main():
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = sorted(set(riq.SUBSTITUTIONS) | set(rmo.SUBSTITUTIONS)) + SUBSTITUTIONS
    rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/kv_scheme/{name}"
        try:
            answers["cases"][key] = {kv: one(todo[name], kv) for kv in KV_DTYPES}
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
        print(name, json.dumps(answers["cases"][key])[:300], file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
