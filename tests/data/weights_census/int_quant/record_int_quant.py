"""Record what vLLM 0.33 builds, rank by rank, for the AWQ, GPTQ and compressed-tensors
checkpoints here (`*.config.json`, written by make_int_cases.py) as an H100 would start them
(-> answers.json).

A development tool, never run by the tests. It reuses ../record_census.py (every module built
on the meta device by vLLM's own `initialize_model`, its substitutions included) and adds the
ones that make the CPU's build an H100's (listed in answers.json): the platform seen by
auto_awq.py, auto_gptq.py, marlin_utils.py, moe_wna16.py and compressed_tensors.py is CUDA, capability 9.0
(so AWQ takes the Marlin method, or falls back to AutoAWQLinearMethod where vLLM does, Marlin's
supported types are the GPU's, and compressed-tensors picks W8A8 fp8 as an H100 does); no linear
kernel (mixed-precision, int8, fp8) and no WNA16 or int8 MoE backend chosen (compressed-tensors'
MoE methods' too) (after the layer's tensors
are made; they hold none until process_weights_after_loading, not run here). From the project
root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 1500 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/int_quant/record_int_quant.py [CASE ...]

$CT_PKGS: a folder holding compressed-tensors 0.17.0 (the version vLLM 0.33.0 pins) and loguru,
which the oracle's environment lacks (`$ORACLE_HOME/venv/bin/python -m pip install --no-deps
--target $CT_PKGS compressed-tensors==0.17.0 loguru`); the compressed-tensors cases need it, the
AWQ / GPTQ ones do not.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_census", HERE.parent / "record_census.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

import vllm
import torch
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability
from vllm.model_executor.layers.quantization import auto_awq, auto_gptq, moe_wna16
from vllm.model_executor.layers.quantization.utils import marlin_utils
from vllm.model_executor.layers.quantization.compressed_tensors import compressed_tensors as ct
from vllm.model_executor.layers.quantization.compressed_tensors.schemes import (
    compressed_tensors_wNa16 as ct_wna16, compressed_tensors_w8a8_int8 as ct_int8,
    compressed_tensors_w8a8_fp8 as ct_fp8)
from vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors_moe import (
    compressed_tensors_moe_wna16 as ct_moe_wna16,
    compressed_tensors_moe_w8a8_int8 as ct_moe_int8)


class _H100:
    """The platform as auto_awq/auto_gptq/marlin_utils ask it: CUDA, SM 9.0."""
    def __getattr__(self, name):
        return getattr(current_platform, name)
    def is_cpu(self): return False
    def is_xpu(self): return False
    def is_rocm(self): return False
    def is_cuda(self): return True
    def get_device_capability(self, device_id=0): return DeviceCapability(9, 0)


class _NoKernel:
    def __init__(self, *a, **k): pass


for mod in (auto_awq, auto_gptq, marlin_utils, ct, moe_wna16):
    mod.current_platform = _H100()
for mod in (auto_awq, auto_gptq, ct_wna16):
    mod.choose_mp_linear_kernel = lambda cfg: _NoKernel
for mod in (auto_awq, auto_gptq, moe_wna16, ct_moe_wna16):
    mod.select_wna16_moe_backend = lambda *a, **k: (None, None)
ct_moe_int8.select_int8_moe_backend = lambda *a, **k: (None, None)
ct_int8.init_int8_linear_kernel = lambda *a, **k: None
class _AnyKernel:
    """A kernel whose every method returns None (W8A8Fp8 asks its quant keys after
    create_weights has made the layer's tensors)."""
    def __getattr__(self, name): return lambda *a, **k: None


ct_fp8.init_fp8_linear_kernel = lambda *a, **k: _AnyKernel()
SUBSTITUTIONS = rc.SUBSTITUTIONS + [
    "auto_awq/auto_gptq/marlin_utils/moe_wna16/compressed_tensors: current_platform CUDA with "
    "capability 9.0 (an H100)",
    "mixed-precision, int8 and fp8 linear kernels and the WNA16 MoE backend: none chosen "
    "(after create_weights; they hold no tensor of the layer's)",
    "compressed-tensors' WNA16 and int8 MoE methods: no backend chosen (the CPU has none; the "
    "tensors create_weights makes do not depend on it: N-first, converted after loading)"]


def main():
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = SUBSTITUTIONS
    rc.rqn.rmm_main_env()
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/int_quant/{name}"
        try:
            answers["cases"][key] = rc.record(key, todo[name], rc.TPS)
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
