# ruff: noqa
"""Dev tool (imported by record.py, under the oracle's vLLM): the substitutions the classes
kvcli sized since seed 0 need to be built here, each as its own recorder makes it (one
architecture's substitutions never touch another's build):

- SarvamMLAForCausalLM, DomynEdgeForCausalLM: ../refused_lifted/stand_ins.py's config classes
  (their checkpoints bring them as remote code); Sarvam's backend by the layer's own use_mla
  (TRITON_MLA for its MLA layers: vLLM's model-level use_mla is false for sarvam_mla).
- Rnj1ForCausalLM: TRITON_ATTN (its chunked layers assert it: `--attention-backend
  TRITON_ATTN`, ../refused_lifted/record_refused.py).
- PanguProMoEV2ForCausalLM: stand_ins.py's config class; the backend its sink layers name
  (StaticSinkAttention asks for FLASH_ATTN_DIFFKV: record_refused.py's pick_backend).
- MiMoV2FlashForCausalLM: the platform's own pick on an H100 (capability 9.0: its
  FLASH_ATTN_DIFFKV for values narrower than keys, ../mimo_v2/mimo_build.py).
- KimiLinearForCausalLM: ../kimi_linear/kl_build.py's: torch.cuda.Event / Stream
  placeholders, capability 9.0, VLLM_KIMI_K3_GEMM_AR=0, TRITON_MLA, no JIT warm-up.
"""
import os, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "refused_lifted"))
import stand_ins
import torch
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability
from vllm.v1.attention import selector
from vllm.v1.attention.backends.registry import AttentionBackendEnum as E

stand_ins.register()
_PLATFORM_PICK = type(current_platform).get_attn_backend_cls
_CAPABILITY = current_platform.get_device_capability
SUBSTITUTIONS = ["new_classes.py (per architecture): " + line
                 for line in (__doc__ or "").split("\n- ")[1:]]


class _NoCuda:
    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None


def by_layer(selected_backend, attn_selector_config, *a, **k):
    return (E.TRITON_MLA if attn_selector_config.use_mla else E.FLASH_ATTN).get_path()


def install(arch):
    """The backend pick for ``arch`` (None: record.py's own), after its substitutions."""
    current_platform.get_device_capability = _CAPABILITY
    # (vLLM caches the backend a layer's arguments got: an earlier case's FLASH_ATTN would
    # answer RNJ-1's chunked layers, which assert TRITON_ATTN)
    selector._cached_get_attn_backend.cache_clear()
    if arch == "SarvamMLAForCausalLM":
        return by_layer
    if arch == "PanguProMoEV2ForCausalLM":
        return lambda selected, *a, **k: (selected or E.FLASH_ATTN).get_path()
    if arch == "Rnj1ForCausalLM":
        return lambda *a, **k: E.TRITON_ATTN.get_path()
    if arch == "MiMoV2FlashForCausalLM":
        current_platform.get_device_capability = lambda *a, **k: DeviceCapability(9, 0)
        return lambda *a, **k: _PLATFORM_PICK(*a, **k)
    if arch == "KimiLinearForCausalLM":
        os.environ["VLLM_KIMI_K3_GEMM_AR"] = "0"
        torch.cuda.Event = _NoCuda
        torch.cuda.Stream = _NoCuda
        current_platform.get_device_capability = lambda *a, **k: DeviceCapability(9, 0)
        return lambda *a, **k: E.TRITON_MLA.get_path()
    return None
