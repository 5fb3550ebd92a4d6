# ruff: noqa
"""Dev tool (imported by record_dsv4.py, under the oracle's vLLM): builds vLLM 0.33's
DeepseekV4ForCausalLM on the meta device as an H100 would (the CUDA implementation,
vllm/models/deepseek_v4/nvidia/, its FlashMLA attention) and collects its KV cache specs.
Every substitution it makes is in SUBSTITUTIONS (README.md says why none changes a spec or a
weight)."""
import importlib.util, json, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, the census's substitutions
rc = rks.rc

import torch
from vllm.config import (CacheConfig, DeviceConfig, KernelConfig, LoadConfig, ModelConfig,
                         ParallelConfig, VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability, Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.worker.gpu import attn_utils


class _NoCuda:
    """torch.cuda.Event / torch.cuda.Stream without CUDA: the layers keep them for overlap
    at run time; no tensor, no spec."""
    def __init__(self, *a, **k):
        pass


def install():
    """The substitutions, after record_census's environment is set (rmm_main_env)."""
    torch.cuda.Event = _NoCuda
    torch.cuda.Stream = _NoCuda
    # deepseek_v4/__init__.py picks the platform's implementation when first imported; the
    # census makes the platform answer is_cpu() (its MoE kernel choice): the CUDA one here
    saved, current_platform.is_cpu = current_platform.is_cpu, lambda: False
    import vllm.models.deepseek_v4 as dsv4
    current_platform.is_cpu = saved
    assert dsv4.DeepseekV4ForCausalLM.__module__.endswith("nvidia.model")
    # an H100 (SM90): FlashMLA's attention class, its fp8 einsum recipe
    current_platform.get_device_capability = lambda *a, **k: DeviceCapability(9, 0)


# (short lines: README.md says each in full)
SUBSTITUTIONS = [
    "every one of ../kv_spec_census/record_kv_specs.py (listed in its answers.json), and:",
    "1. torch.cuda.Event / torch.cuda.Stream: placeholders (no tensor)",
    "2. vllm.models.deepseek_v4 imported with is_cpu() false: nvidia/model.py",
    "3. device capability 9.0 (an H100): DeepseekV4FlashMLAAttention, fp8_ds_mla",
    "4. kernel_config.enable_jit_warmup false (tilelang absent; no tensor)",
]


def model_config(cfg, max_model_len):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    return ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0,
                       max_model_len=max_model_len)


def vllm_config(mc, prefix_caching=True):
    return VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                      cache_config=CacheConfig(enable_prefix_caching=prefix_caching),
                      kernel_config=KernelConfig(enable_jit_warmup=False),
                      device_config=DeviceConfig(device="cpu"),
                      load_config=LoadConfig(load_format="dummy", device="meta"))


def build(mc, tp=1, rank=0):
    """The model at (tp, rank), its VllmConfig, and (at any rank) the KV cache specs."""
    rc.set_tp(tp, rank)
    vc = vllm_config(mc)
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
        # (CudaPlatform's block-size pass, after the layers name their backends)
        Platform.update_block_size_for_backend(vc)
        specs = attn_utils.get_kv_cache_spec(vc)
    rc.set_tp(1, 0)
    return model, vc, specs
