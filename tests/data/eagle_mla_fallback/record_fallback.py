# ruff: noqa
"""Record what vLLM 0.33 plans for an MLA target (DeepSeek-V3) beside an EAGLE-3 draft whose
layer is a sliding window of another page size (-> answers.json): the layers' KV specs, vLLM's
KV cache groups and its KVCacheConfig on given memories (the engine core's road). The MLA page
does not divide the draft's, so `unify_kv_cache_spec_page_size` raises NotImplementedError and
`get_kv_cache_groups` takes `_try_get_full_allocation_fallback_groups`.

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src flock /tmp/vllm-build.lock nice -n 19 \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/eagle_mla_fallback/record_fallback.py

It executes ../mtp_draft/record_mtp_models.py first (and through it
../eagle_draft/record_draft_models.py) for their substitutions, then names the backend by
layer: TRITON_MLA for the target's MLA layers (the MTP recorder's), FLASH_ATTN for the draft's
(the EAGLE recorder's). Both are listed in answers.json.
"""
import importlib.util, json, sys, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_mtp_models", HERE.parent / "mtp_draft" / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)                   # vLLM imported, its substitutions applied
rdm = rmm.rdm

import torch
import vllm
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         SpeculativeConfig, VllmConfig, set_current_vllm_config)
from vllm.config.vllm import get_layers_from_vllm_config
from vllm.model_executor.layers.attention_layer_base import AttentionLayerBase
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                              resolve_kv_cache_layout)
from vllm.v1.core import kv_cache_planning as P
from vllm.v1.core.kv_cache_utils import get_kv_cache_capacity
from vllm.v1.worker.gpu import attn_utils

SUBSTITUTIONS = [s for s in rmm.SUBSTITUTIONS if not s.startswith("attention backend")] + [
    "attention backend: TRITON_MLA for MLA layers, FLASH_ATTN for the others (the CPU's "
    "unspecified platform names none)"]
current_platform.get_attn_backend_cls = lambda sel, attn_selector_config, **k: (
    AttentionBackendEnum.TRITON_MLA if attn_selector_config.use_mla
    else AttentionBackendEnum.FLASH_ATTN).get_path()
# The CPU's unspecified platform supports no hybrid KV cache manager, so VllmConfig would turn
# it off (config/vllm.py) and promote the sliding layer before any page is unified; a GPU's
# (CudaPlatform) supports it
current_platform.support_hybrid_kv_cache = lambda: True
SUBSTITUTIONS.append("support_hybrid_kv_cache(): true, as on a GPU (the hybrid manager on)")
K = 3
BLOCK = 64          # (FlashMLA's on an H100; given, as the CPU platform would pick 16)
# case -> (max_model_len, [available bytes, ...])
CASES = {"tiny-dsv3-eagle3-swa": (4096, [64 << 20, 1 << 30]),
         "tiny-dsv3-eagle3-full": (4096, [64 << 20]),
         "dsv3-eagle3-swa": (32768, [8 << 30, 20 << 30])}
def build(case, mml, availables):
    d = HERE / case
    mc = ModelConfig(model=str(d / "target"), skip_tokenizer_init=True, seed=0,
                     max_model_len=mml)
    pc = ParallelConfig()
    sc = SpeculativeConfig(method="eagle3", model=str(d / "draft"), num_speculative_tokens=K,
                           target_model_config=mc, target_parallel_config=pc)
    vc = VllmConfig(model_config=mc, parallel_config=pc, speculative_config=sc,
                    cache_config=CacheConfig(block_size=BLOCK),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        target = initialize_model(vc)
    target_names = set(get_layers_from_vllm_config(vc, AttentionLayerBase))
    draft, _ = rdm.load_draft_spied(target, vc, with_params=False)
    all_layers = get_layers_from_vllm_config(vc, AttentionLayerBase)
    for n in set(all_layers) - target_names:
        all_layers[n].is_draft_layer = True
    specs = attn_utils.get_kv_cache_spec(vc)
    rec = {"max_model_len": mml, "block_size": BLOCK, "num_speculative_tokens": K,
           "disable_hybrid_kv_cache_manager": vc.scheduler_config.disable_hybrid_kv_cache_manager,
           "specs": {n: rdm.spec_json(s) for n, s in specs.items()}, "planning": []}
    with set_current_vllm_config(vc):
        # (the engine core resolves the layout from the backends the layers name)
        backends = get_current_attn_backends(vc)
        names = [lay.name for lay in get_supported_kv_cache_layouts(backends)]
        vc.cache_config.kv_cache_layout = None
        layout = resolve_kv_cache_layout(vc, [names], list(specs.values()))
        vc.cache_config.kv_cache_layout = layout.name
        rec["layout"] = layout.name
        try:        # (the page unification the fallback stands in for)
            P.unify_kv_cache_spec_page_size(dict(specs))
            rec["unify"] = "unified"
        except NotImplementedError as e:
            rec["unify"] = f"NotImplementedError: {e}"
        groups = P.get_global_kv_cache_groups(vc, [specs])
        rec["groups"] = [{"layers": list(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
                          "block_size": g.kv_cache_spec.block_size,
                          "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                         for g in groups]
        for available in availables:
            kc = P.get_kv_cache_configs(vc, [specs], [available], groups)[0]
            tokens, _ = get_kv_cache_capacity(vc, kc)
            rec["planning"].append({
                "available": available, "num_blocks": kc.num_blocks,
                "kv_cache_tokens": tokens,
                "tensors": [{"size": t.size, "layers": len(t.layers)}
                            for t in kc.kv_cache_tensors]})
    return rec


def main():
    import socket
    from vllm.distributed.parallel_state import (ensure_model_parallel_initialized,
                                                 init_distributed_environment)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with set_current_vllm_config(VllmConfig(device_config=DeviceConfig(device="cpu"))):
        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"tcp://127.0.0.1:{port}")
        ensure_model_parallel_initialized(1, 1)
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = SUBSTITUTIONS
    for case in sys.argv[1:] or list(CASES):
        try:
            answers["cases"][case] = build(case, *CASES[case])
        except (ValueError, NotImplementedError, AssertionError) as e:
            answers["cases"][case] = {"refused": f"{type(e).__name__}: {e}",
                                      "traceback_tail": traceback.format_exc().splitlines()[-6:]}
        print(case, "refused" if "refused" in answers["cases"][case] else "ok", file=sys.stderr)
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
