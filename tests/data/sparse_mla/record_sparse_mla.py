# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's KV cache specs and planning for the sparse-MLA models
(DeepSeek-V3.2, GLM-5), recorded into answers.json for tests/test_sparse_mla.py.

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/sparse_mla/record_sparse_mla.py \\
        > tests/data/sparse_mla/answers.json

No GPU: each config.json here (the published shapes, typed in; no quantization_config) built by
vLLM's `initialize_model` on the meta device with every substitution of
../kv_spec_census/record_kv_specs.py (imported), the sparse backend an H100 picks
(FLASH_ATTN_MLA_SPARSE with a bf16 cache) and the block size the platform's
`update_block_size_for_backend` gives it and the indexer's backend; the specs collected as
the GPU runner collects them, then vLLM's planning (`get_kv_cache_groups`,
`get_kv_cache_config_from_groups`, ../vllm_planning.py) per case.
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)
from vllm_planning import plan, planning_config

import torch
from vllm.config import (CacheConfig, DeviceConfig, LoadConfig, ModelConfig, ParallelConfig,
                         VllmConfig, set_current_vllm_config)
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.platforms.interface import Platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.registry import AttentionBackendEnum
from vllm.v1.kv_cache_interface import get_kv_cache_spec_kind
from vllm.v1.worker.gpu import attn_utils

CASES = [  # (config, max_model_len, available bytes per rank)
    ("deepseek-v3.2", 163840, 52_147_756_953),
    ("deepseek-v3.2", 32768, 3 << 30),
    ("glm-5", 202752, 40 << 30),
    ("glm-5", 8192, 1 << 30),
]


def build(name, mml):
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(cfg))
    mc = ModelConfig(model=str(d), skip_tokenizer_init=True, seed=0, max_model_len=mml)
    backend = AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE
    current_platform.get_attn_backend_cls = lambda *a, **k: backend.get_path()
    vc = VllmConfig(model_config=mc, parallel_config=ParallelConfig(),
                    cache_config=CacheConfig(enable_prefix_caching=True),
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
    out = {"substitutions": rks.SUBSTITUTIONS, "cases": []}
    for name, mml, available in CASES:
        mc, vc, cls, specs = build(name, mml)
        c = planning_config(max_model_len=mml, max_num_batched_tokens=8192,
                            max_in_flight_tokens=8192 * 2)
        groups, kc, numbers = plan(c, specs, available)
        out["cases"].append({
            "config": name, "class": cls, "max_model_len": mml, "available": available,
            "block_size": vc.cache_config.block_size, "use_mla": mc.use_mla,
            "num_layers": mc.hf_text_config.num_hidden_layers,
            # (name, type, block size, heads, head size, dtype, cache dtype, page bytes)
            "specs": [[n, type(s).__name__, s.block_size, s.num_kv_heads, s.head_size,
                       rks.rc.rdm.dt(s.dtype), s.cache_dtype_str, s.page_size_bytes]
                      for n, s in specs.items()],
            "groups": [{"num_layers": len(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
                        "block_size": g.kv_cache_spec.block_size,
                        # (what its KV events name: `get_kv_cache_spec_kind`)
                        "kv_cache_spec_kind": get_kv_cache_spec_kind(g.kv_cache_spec).value,
                        "page_size_bytes": g.kv_cache_spec.page_size_bytes} for g in groups],
            "num_tensors": len(kc.kv_cache_tensors),
            "tensor_sizes": sorted({t.size for t in kc.kv_cache_tensors}),
            **numbers})
        print(name, mml, numbers, [(g["spec"], g["num_layers"], g["page_size_bytes"])
                                   for g in out["cases"][-1]["groups"]], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
