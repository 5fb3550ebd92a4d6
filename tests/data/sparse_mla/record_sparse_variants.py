# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's sparse MLA beyond the bf16 default, recorded into
variants.json for tests/test_sparse_mla_variants.py.

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/sparse_mla/record_sparse_variants.py \\
        > tests/data/sparse_mla/variants.json

Three parts, no GPU (every substitution of record_sparse_mla.py, which it imports):

* "backends": what each sparse MLA backend CudaPlatform lists on SM90 (its order for a 576
  head: FLASH_ATTN_MLA_SPARSE, FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE_SM90) says of a
  configuration: `validate_configuration`'s reasons per (--kv-cache-dtype, explicit
  --block-size), on capability 9.0, and the dtype `_canonicalize_sparse_mla_kv_cache_dtype`
  turns the cache dtype into on that backend; DeepseekV32IndexerBackend's kernel block sizes.
  (On this CPU FLASH_ATTN_MLA_SPARSE's `flash_attn_supports_mla` and FLASHINFER_MLA_SPARSE_SM90's
  FlashInfer feature check answer False: their reasons past the dtype and block checks are
  this machine's, not an H100's.)
* "cases": the model built (the published configs, or one with IndexCache keys added: a case's
  overrides, or the -index-*.config.json here, which the weights census also builds) with a
  given --kv-cache-dtype on the backend an H100 picks for it, at the block size
  `update_block_size_for_backend` gives, and vLLM's planning of its specs.
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_sparse_mla",
                                               HERE / "record_sparse_mla.py")
rsm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rsm)
rks = rsm.rks
from vllm_planning import plan, planning_config

import torch
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import DeviceCapability, Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind
from vllm.v1.worker.gpu import attn_utils
from vllm.model_executor.layers.attention import mla_attention

SM90 = ["FLASH_ATTN_MLA_SPARSE", "FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM90"]
DTYPES = ["auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"]
BLOCKS = [None, 16, 32, 64, 128]
# (config, overrides, kv cache dtype, backend, max_model_len, available bytes per rank)
CASES = [
    ("deepseek-v3.2", {}, "fp8", "FLASHMLA_SPARSE", 163840, 52_147_756_953),
    ("deepseek-v3.2", {}, "fp8_ds_mla", "FLASHMLA_SPARSE", 32768, 3 << 30),
    ("glm-5", {}, "fp8", "FLASHMLA_SPARSE", 202752, 40 << 30),
    ("deepseek-v3.2", {}, "fp8_e4m3", "FLASHINFER_MLA_SPARSE_SM90", 32768, 3 << 30),
    ("deepseek-v3.2", {"index_topk_freq": 2}, "auto", "FLASH_ATTN_MLA_SPARSE", 163840,
     52_147_756_953),
    ("deepseek-v3.2-index-freq", {}, "auto", "FLASH_ATTN_MLA_SPARSE", 32768, 3 << 30),
    ("glm-5-index-pattern", {}, "auto", "FLASH_ATTN_MLA_SPARSE", 202752, 40 << 30),
    ("glm-5-index-pattern", {}, "fp8", "FLASHMLA_SPARSE", 8192, 1 << 30),
]


def backend_checks():
    from vllm.v1.attention.backends.mla.indexer import DeepseekV32IndexerBackend
    cfg = json.loads((HERE / "deepseek-v3.2.config.json").read_text())
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    device_config=DeviceConfig(device="cpu"))
    sizes = DeepseekV32IndexerBackend.get_supported_kernel_block_sizes()
    out = {"indexer_kernel_block_sizes": [str(s) for s in sizes], "checks": []}
    with set_current_vllm_config(vc):
        for name in SM90:
            cls = AttentionBackendEnum[name].get_class()
            for dt in DTYPES:
                for bs in BLOCKS:
                    reasons = cls.validate_configuration(
                        head_size=576, dtype=torch.bfloat16, kv_cache_dtype=dt, block_size=bs,
                        use_mla=True, has_sink=False, use_sparse=True, use_mm_prefix=False,
                        use_per_head_quant_scales=False,
                        device_capability=DeviceCapability(9, 0), attn_type="decoder")
                    canon = mla_attention._canonicalize_sparse_mla_kv_cache_dtype(cls, dt)
                    out["checks"].append({"backend": name, "kv_cache_dtype": dt,
                                          "block_size": bs, "reasons": reasons,
                                          "cache_dtype": canon})
    return out


def build(name, overrides, kv_dtype, backend_name, mml):
    cfg = json.loads((HERE / f"{name}.config.json").read_text()) | overrides
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=mml)
    backend = AttentionBackendEnum[backend_name]
    current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(enable_prefix_caching=True, cache_dtype=kv_dtype),
                    device_config=DeviceConfig(device="cpu"),
                    load_config=LoadConfig(load_format="dummy", device="meta"))
    rks.rc.set_tp(1, 0)
    with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
        model = initialize_model(vc)
        Platform.update_block_size_for_backend(vc)
        specs = attn_utils.get_kv_cache_spec(vc)
    return mc, vc, type(model).__name__, specs


def main():
    rks.rc.rqn.rmm_main_env()
    # FLASHMLA_SPARSE's impl reserves its scratch when built (the GPU runner makes the manager
    # first): a manager on the meta device, nothing allocated
    from vllm.v1.worker.workspace import init_workspace_manager
    init_workspace_manager(torch.device("meta"))
    out = {"substitutions": rks.SUBSTITUTIONS, "backends": backend_checks(), "cases": []}
    for name, overrides, kv_dtype, backend, mml, available in CASES:
        mc, vc, cls, specs = build(name, overrides, kv_dtype, backend, mml)
        c = planning_config(max_model_len=mml, max_num_batched_tokens=8192,
                            max_in_flight_tokens=8192 * 2)
        groups, kc, numbers = plan(c, specs, available)
        out["cases"].append({
            "config": name, "overrides": overrides, "kv_cache_dtype": kv_dtype,
            "backend": backend, "class": cls, "max_model_len": mml, "available": available,
            "block_size": vc.cache_config.block_size,
            "cache_dtype_after": vc.cache_config.cache_dtype,
            "num_layers": mc.hf_text_config.num_hidden_layers,
            # (name, type, block size, heads, head size, dtype, cache dtype, page bytes,
            #  the block stride alignment in bytes, index-group leader)
            "specs": [[n, type(s).__name__, s.block_size, s.num_kv_heads, s.head_size,
                       rks.rc.rdm.dt(s.dtype), s.cache_dtype_str, s.page_size_bytes,
                       s.get_block_stride_alignment(), s.is_index_group_leader]
                      for n, s in specs.items()],
            "groups": [{"num_layers": len(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
                        "block_size": g.kv_cache_spec.block_size,
                        "kv_cache_spec_kind": get_kv_cache_spec_kind(g.kv_cache_spec).value,
                        "page_size_bytes": g.kv_cache_spec.page_size_bytes} for g in groups],
            "num_tensors": len(kc.kv_cache_tensors),
            "tensor_sizes": sorted({t.size for t in kc.kv_cache_tensors}),
            **numbers})
        print(name, overrides, kv_dtype, numbers,
              [(g["spec"], g["num_layers"], g["page_size_bytes"])
               for g in out["cases"][-1]["groups"]], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
