# ruff: noqa
"""Dev tool (imported by record_mimo.py, under the oracle's vLLM): builds vLLM 0.33's
MiMoV2FlashForCausalLM / MiMoV2ForCausalLM (model_executor/models/mimo_v2.py) on the meta
device and collects its KV cache specs. Every substitution is in SUBSTITUTIONS (README.md says
why none changes a spec or a weight)."""
import importlib.util, json, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, the census's substitutions
rc = rks.rc

import torch
from transformers import AutoConfig, PretrainedConfig
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability, Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.worker.gpu import attn_utils


class MiMoV2StandInConfig(PretrainedConfig):
    """model_type mimo_v2 (MiMo-V2-Pro / V2.5) has no config class in transformers 5.20.2 (the
    checkpoints bring theirs as remote code): a plain PretrainedConfig keeping config.json's
    keys as they are, no defaults of its own."""
    model_type = "mimo_v2"


def install():
    """The substitutions, after record_census's environment is set (rmm_main_env)."""
    AutoConfig.register("mimo_v2", MiMoV2StandInConfig, exist_ok=True)
    # an H100 (SM90): what FLASH_ATTN_DIFFKV's is_supported_on_current_device reads
    current_platform.get_device_capability = lambda *a, **k: DeviceCapability(9, 0)


SUBSTITUTIONS = [
    "every one of ../kv_spec_census/record_kv_specs.py (listed in its answers.json), and:",
    "1. model_type mimo_v2: MiMoV2StandInConfig (a bare PretrainedConfig) registered",
    "2. device capability 9.0 (an H100)",
]


def model_config(cfg, max_model_len):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    return ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0,
                       max_model_len=max_model_len, trust_remote_code=True)


def vllm_config(mc, prefix_caching=True):
    return VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                      cache_config=CacheConfig(enable_prefix_caching=prefix_caching),
                      device_config=DeviceConfig(device="cpu"),
                      load_config=LoadConfig(load_format="dummy", device="meta"))


def build(mc, tp=1, rank=0):
    """The model at (tp, rank), its VllmConfig, and (at any rank) the KV cache specs."""
    rc.set_tp(tp, rank)
    vc = vllm_config(mc)
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
        Platform.update_block_size_for_backend(vc)
        specs = attn_utils.get_kv_cache_spec(vc)
    rc.set_tp(1, 0)
    return model, vc, specs
