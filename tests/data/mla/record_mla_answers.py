"""Dev tool (not a test, not run by CI): vLLM 0.33.0's own answers for MLA models, recorded
into answers.json for tests/test_mla.py.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/mla/record_mla_answers.py > tests/data/mla/answers.json

No GPU. Per config.json here (the published shapes of DeepSeek-V3, DeepSeek-V2-Lite and
Kimi-K2, typed in; their fp8 ``quantization_config`` left out, the oracle's environment cannot
import its module): the real `ModelConfig` built from the file says whether vLLM uses MLA, the
head size and the KV heads per rank at the case's TP; the layer's spec is the real
`MLAAttention.get_kv_cache_spec` (on an instance holding only the attributes it reads); vLLM's
planning (`get_kv_cache_groups`, `get_kv_cache_config_from_groups`, max concurrency, capacity,
the max_model_len estimate) runs on one spec per decoder layer.

`backends`: vLLM 0.33's MLA backend priorities on CUDA per compute capability and KV cache
dtype (`_get_backend_priorities`) and, for each backend class this CPU can import, whether it
takes the capability, the cache dtype and head size 576, and `get_preferred_block_size(16)`
(the block size `update_block_size_for_backend` starts with when --block-size is not given).
FLASH_ATTN_MLA, FLASHINFER_MLA and CUTLASS_MLA do not import without CUDA or flashinfer: their
rows say so, and kvcli's block-size note takes their figures from their source (MultipleOf(16),
[32, 64], [128]). `vllm.platforms.cuda` is imported with its CUDA op libraries stubbed (they register
kernels; the priority table does not use them).
"""
# ruff: noqa
import json
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace as NS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))      # vllm_planning.py
from vllm_planning import plan as planned  # noqa: E402
from vllm_planning import planning_config  # noqa: E402

CASES = [  # (config, tp, kv_cache_dtype, block_size, available bytes per rank, max_model_len)
    ("deepseek-v3", 8, "auto", 16, 52_147_756_953, 163840),
    ("deepseek-v3", 8, "fp8", 64, 40 << 30, 163840),
    ("deepseek-v3", 16, "auto", 32, 3 << 30, 32768),
    ("deepseek-v2-lite", 1, "auto", 16, 30 << 30, 163840),
    ("deepseek-v2-lite", 2, "fp8", 64, 1 << 30, 8192),
    ("kimi-k2", 8, "auto", 16, 45 << 30, 131072),
]


def model_config(name: str, mml: int):
    from vllm.config import ModelConfig

    d = tempfile.mkdtemp()
    cfg = json.loads((HERE / f"{name}.config.json").read_text())
    # the fp8 checkpoints' quantization_config needs compressed_tensors, which the oracle's
    # environment lacks; it changes the weights, not the KV cache
    cfg.pop("quantization_config", None)
    (Path(d) / "config.json").write_text(json.dumps(cfg))
    return ModelConfig(model=d, skip_tokenizer_init=True, max_model_len=mml, dtype="auto")


def layer_spec(mc, kv_cache_dtype: str, block_size: int):
    from vllm.model_executor.layers.attention.mla_attention import MLAAttention

    layer = object.__new__(MLAAttention)
    layer.__dict__.update(kv_cache_dtype=kv_cache_dtype, head_size=mc.get_head_size(),
                          sliding_window=None, topk_buffer_width=None, indexer=None,
                          non_causal_multi_token_decode=False)
    return layer.get_kv_cache_spec(NS(cache_config=NS(block_size=block_size), model_config=mc))


def plan(specs: dict, available: int, mml: int, mnbt: int = 2048) -> dict:
    c = planning_config(max_model_len=mml, max_num_batched_tokens=mnbt,
                        max_in_flight_tokens=2 * mnbt)
    groups, kc, numbers = planned(c, specs, available)
    return {"groups": [{"num_layers": len(g.layer_names), "spec": type(g.kv_cache_spec).__name__,
                        "block_size": g.kv_cache_spec.block_size,
                        "page_size_bytes": g.kv_cache_spec.page_size_bytes} for g in groups],
            "num_blocks": kc.num_blocks, "num_tensors": len(kc.kv_cache_tensors),
            "max_concurrency": numbers["max_concurrency"],
            "kv_cache_tokens": numbers["kv_cache_tokens"],
            "max_model_len_fits": numbers["max_model_len_fits"]}


def case(name, tp, kv_dtype, bs, available, mml) -> dict:
    from vllm.config import ParallelConfig

    mc = model_config(name, mml)
    spec = layer_spec(mc, kv_dtype, bs)
    n = mc.get_num_layers(ParallelConfig())
    return {"config": name, "tp": tp, "kv_cache_dtype": kv_dtype, "block_size": bs,
            "available": available, "max_model_len": mml,
            "model": {"use_mla": mc.use_mla, "head_size": mc.get_head_size(),
                      "num_kv_heads_per_rank": mc.get_num_kv_heads(
                          ParallelConfig(tensor_parallel_size=tp)),
                      "num_layers": n},
            "spec": {"type": type(spec).__name__, "block_size": spec.block_size,
                     "num_kv_heads": spec.num_kv_heads, "head_size": spec.head_size,
                     "dtype": str(spec.dtype).removeprefix("torch."),
                     "page_size_bytes": spec.page_size_bytes},
            "expected": plan({f"layers.{i}": spec for i in range(n)}, available, mml)}


def backends() -> list:
    import types
    # cuda.py loads the CUDA custom ops at import; its priority table needs none of them
    for mod in ("vllm._C_stable_libtorch", "vllm._qutlass_C"):
        sys.modules.setdefault(mod, types.ModuleType(mod))
    from vllm.platforms.cuda import _get_backend_priorities
    from vllm.platforms.interface import DeviceCapability

    out = []
    for major in (8, 9, 10):
        for kv in ("auto", "fp8"):
            row = []
            for b in _get_backend_priorities(True, DeviceCapability(major, 0), num_heads=128,
                                             kv_cache_dtype=kv, head_size=576):
                try:
                    cls = b.get_class()
                except Exception as e:  # the kernels' modules need CUDA / flashinfer
                    row.append({"backend": b.name, "importable": type(e).__name__})
                    continue
                row.append({"backend": b.name, "capability_ok": cls.supports_compute_capability(
                                DeviceCapability(major, 0)),
                            "kv_cache_dtype_ok": cls.supports_kv_cache_dtype(kv),
                            "head_size_ok": cls.supports_head_size(576),
                            "preferred_block_size": cls.get_preferred_block_size(16)})
            out.append({"capability": f"{major}.0", "kv_cache_dtype": kv, "priorities": row})
    return out


def main() -> None:
    print(json.dumps({"generator": "vLLM 0.33.0 ModelConfig + MLAAttention.get_kv_cache_spec + "
                                   "kv_cache_planning (real code, CPU), layer-outer layout LBNHC; "
                                   "backends: cuda._get_backend_priorities + each class's checks",
                      "cases": [case(*c) for c in CASES], "backends": backends()}, indent=1))


if __name__ == "__main__":
    main()
