# ruff: noqa
"""Dev tool (imported by record_kimi_linear.py, under the oracle's vLLM): builds vLLM 0.33's
KimiLinearForCausalLM on the meta device as an H100 would (vllm/models/kimi_k3/nvidia/, the
implementation its __init__ picks on a CUDA platform) with ../deepseek_v4/dsv4_build.py's
build, and the substitutions in SUBSTITUTIONS (README.md says why none changes a spec or a
weight)."""
import os, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "deepseek_v4"))
import dsv4_build as b                          # the census's substitutions, its build()
import torch
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability
from vllm.v1.attention.backends.registry import AttentionBackendEnum

rc = b.rc


def install():
    """The substitutions, after record_census's environment is set (rmm_main_env)."""
    # (GEMM+all-reduce fusion: vLLM turns it off on SM90 anyway, "not SM100-family"; the
    # check it would run imports cutlass, absent here)
    os.environ["VLLM_KIMI_K3_GEMM_AR"] = "0"
    torch.cuda.Event = b._NoCuda
    torch.cuda.Stream = b._NoCuda
    import vllm.models.kimi_k3 as k3
    assert k3.KimiLinearForCausalLM.__module__.endswith("nvidia.model")
    current_platform.get_device_capability = lambda *a, **k: DeviceCapability(9, 0)
    # an H100 picks FLASH_ATTN_MLA for a bf16 MLA cache (cuda.py _get_backend_priorities),
    # which needs vllm_flash_attn (absent): TRITON_MLA has its kernel blocks (MultipleOf(16))
    # and spec, so the same block size and pages
    mla = AttentionBackendEnum.TRITON_MLA.get_path()
    current_platform.get_attn_backend_cls = lambda *a, **k: mla


SUBSTITUTIONS = [
    "every one of ../kv_spec_census/record_kv_specs.py (listed in its answers.json), and:",
    "1. torch.cuda.Event / torch.cuda.Stream: placeholders (no tensor)",
    "2. vllm.models.kimi_k3 imported as on CUDA: nvidia/model.py",
    "3. device capability 9.0 (an H100)",
    "4. attention backend TRITON_MLA for FLASH_ATTN_MLA (an H100's, not importable here): "
    "the same kernel block sizes, MultipleOf(16), and spec",
    "5. VLLM_KIMI_K3_GEMM_AR=0 (off on SM90 anyway: not SM100-family)",
    "6. kernel_config.enable_jit_warmup false (no tensor)",
]
model_config = b.model_config


def build(mc, tp=1, rank=0):
    """dsv4_build.build with the TP size in the ParallelConfig too (the hybrid block size
    reads the Mamba state shape at ``parallel_config.tensor_parallel_size``)."""
    from vllm.config import (CacheConfig, DeviceConfig, KernelConfig, LoadConfig,
                             ParallelConfig, VllmConfig, set_current_vllm_config)
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.platforms.interface import Platform
    from vllm.utils.torch_utils import set_default_torch_dtype
    from vllm.v1.worker.gpu import attn_utils
    rc.set_tp(tp, rank)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(tensor_parallel_size=tp),
                    cache_config=CacheConfig(enable_prefix_caching=True),
                    kernel_config=KernelConfig(enable_jit_warmup=False),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
        Platform.update_block_size_for_backend(vc)
        specs = attn_utils.get_kv_cache_spec(vc)
    rc.set_tp(1, 0)
    return model, vc, specs
