"""Record what vLLM 0.33 builds, rank by rank, for the ModelOpt and fbgemm_fp8 checkpoints here
(`*.config.json`, written by make_modelopt_cases.py; a NAME.hf_quant_config.json beside one is
put beside its config.json as hf_quant_config.json) as an H100 would start them
(-> answers.json), and what `--kv-cache-dtype auto` resolves to for each (`kv_cache_dtype_auto`).

A development tool, never run by the tests. It reuses ../record_census.py (every module built
on the meta device by vLLM's own `initialize_model`, its substitutions included) and adds the
ones that make the CPU's build an H100's (listed in answers.json): the platform seen by
modelopt.py and fbgemm_fp8.py is CUDA, capability 9.0; no linear kernel (fp8, NVFP4, MXFP8) is
chosen (modelopt.py and fbgemm_fp8.py choose it after create_weights has made the layer's
tensors; it holds none of them until process_weights_after_loading, not run here); the MoE
backends (fp8: TRITON, NVFP4: MARLIN, MXFP8: MARLIN) are named without building their kernels
(create_weights makes the same tensors whatever the kernel; NVFP4's input scales, one an expert
of the rank or of the model, are as many without expert parallelism). From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1500 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/modelopt/record_modelopt.py [CASE ...]
"""
# ruff: noqa
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_census", HERE.parent / "record_census.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

import vllm
import torch
from vllm.config import ModelConfig
from vllm.platforms import current_platform
from vllm.utils.torch_utils import resolve_kv_cache_dtype_string
from vllm.platforms.interface import DeviceCapability
from vllm.model_executor.layers.quantization import modelopt, fbgemm_fp8
from vllm.model_executor.layers.fused_moe.oracle.fp8 import Fp8MoeBackend
from vllm.model_executor.layers.fused_moe.oracle.nvfp4 import NvFp4MoeBackend


class _H100:
    """The platform as modelopt.py / fbgemm_fp8.py ask it: CUDA, SM 9.0."""
    def __getattr__(self, name):
        return getattr(current_platform, name)
    def is_cpu(self): return False
    def is_xpu(self): return False
    def is_rocm(self): return False
    def is_cuda(self): return True
    def is_fp8_fnuz(self): return False
    def get_device_capability(self, device_id=0): return DeviceCapability(9, 0)
    def has_device_capability(self, capability, device_id=0):
        cap = capability if isinstance(capability, int) else capability[0] * 10 + capability[1]
        return 90 >= cap


class _AnyKernel:
    """A kernel whose every method returns None (chosen after create_weights)."""
    def __getattr__(self, name): return lambda *a, **k: None


for mod in (modelopt, fbgemm_fp8):
    mod.current_platform = _H100()
    mod.init_fp8_linear_kernel = lambda *a, **k: _AnyKernel()
modelopt.init_nvfp4_linear_kernel = lambda *a, **k: _AnyKernel()
modelopt.init_mxfp8_linear_kernel = lambda *a, **k: _AnyKernel()
modelopt.expose_input_quant_key = lambda *a, **k: None
modelopt.select_fp8_moe_backend = lambda *a, **k: (Fp8MoeBackend.TRITON, None)
modelopt.select_nvfp4_moe_backend = lambda *a, **k: (NvFp4MoeBackend.MARLIN, None)
modelopt.select_mxfp8_moe_backend = lambda *a, **k: (Fp8MoeBackend.MARLIN, None)
SUBSTITUTIONS = rc.SUBSTITUTIONS + [
    "modelopt.py / fbgemm_fp8.py: current_platform CUDA with capability 9.0 (an H100)",
    "fp8, NVFP4 and MXFP8 linear kernels: none chosen (after create_weights; they hold no "
    "tensor of the layer's)",
    "ModelOpt MoE backends named, no kernel built: fp8 TRITON, NVFP4 MARLIN (no global "
    "scales), MXFP8 MARLIN"]


_mkdtemp = tempfile.mkdtemp


def beside(name):
    """Folders made while `name` is recorded get its NAME.hf_quant_config.json, if it has one,
    as their hf_quant_config.json (../record_census.py writes config.json into one)."""
    extra = HERE / name.replace(".config.json", ".hf_quant_config.json")

    def mkdtemp(*a, **k):
        d = _mkdtemp(*a, **k)
        if extra.exists():
            (Path(d) / "hf_quant_config.json").write_text(extra.read_text())
        return d
    rc.tempfile.mkdtemp = tempfile.mkdtemp = mkdtemp


def kv_cache_dtype_auto(cfg):
    """What `--kv-cache-dtype auto` becomes for the checkpoint (EngineArgs.create_engine_config's
    resolve_kv_cache_dtype_string)."""
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    return resolve_kv_cache_dtype_string("auto", mc)


def main():
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = SUBSTITUTIONS
    rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/modelopt/{name}"
        beside(name)
        try:
            answers["cases"][key] = rc.record(key, todo[name], rc.TPS)
            answers["cases"][key]["kv_cache_dtype_auto"] = kv_cache_dtype_auto(todo[name])
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
