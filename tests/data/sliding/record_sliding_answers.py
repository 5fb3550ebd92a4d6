"""Dev tool (not a test, not run by CI): vLLM 0.33.0's answers for the interleaved
sliding-window families kvcli reads without a ``layer_types`` key (Gemma 2, Cohere2), recorded
into answers.json for tests/test_sliding_families.py.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sliding/record_sliding_answers.py > tests/data/sliding/answers.json

No GPU. Per config.json here (Gemma-2-9B and Command R7B, their published shapes typed in):
the real `ModelConfig` built from the file gives the layer types its config class derives, the
dtype `--dtype auto` resolves to (Gemma 2's checkpoint says float32), the head size and the KV
heads a rank; each layer's spec is vLLM's `FullAttentionSpec` or `SlidingWindowSpec` with the
window the model code passes (gemma2.py: ``sliding_window``; commandr.py: ``sliding_window +
1`` for Cohere2's sliding layers, read from its source: building the layer needs a GPU); then
vLLM's planning (`get_kv_cache_groups`, `get_kv_cache_config_from_groups`, max concurrency,
capacity, max_model_len estimate), as tests/data/sizing_vllm/record_vllm_answers.py runs it.
"""
# ruff: noqa
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))      # vllm_planning.py
from vllm_planning import plan, planning_config  # noqa: E402
CASES = [  # (config, tp, available bytes per rank, max_model_len, max_num_batched_tokens)
    ("gemma-2-9b", 1, 40 << 30, 8192, 2048),
    ("gemma-2-9b", 2, 1 << 30, 8192, 8192),
    ("command-r7b", 1, 50 << 30, 132096, 2048),
    ("command-r7b", 4, 2 << 30, 32768, 4096),
]


def case(name, tp, available, mml, mnbt) -> dict:
    import torch
    from vllm.config import ModelConfig, ParallelConfig
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec

    d = tempfile.mkdtemp()
    (Path(d) / "config.json").write_text((HERE / f"{name}.config.json").read_text())
    mc = ModelConfig(model=d, skip_tokenizer_init=True, max_model_len=mml, dtype="auto")
    cfg = mc.hf_text_config
    extra = 1 if cfg.model_type == "cohere2" else 0
    kw = dict(block_size=16, num_kv_heads=mc.get_num_kv_heads(ParallelConfig(
        tensor_parallel_size=tp)), head_size=mc.get_head_size(), dtype=mc.dtype)
    specs = {f"layers.{i}": (SlidingWindowSpec(**kw, sliding_window=cfg.sliding_window + extra)
                             if t == "sliding_attention" else FullAttentionSpec(**kw))
             for i, t in enumerate(cfg.layer_types)}
    c = planning_config(max_model_len=mml, max_num_batched_tokens=mnbt,
                        max_in_flight_tokens=2 * mnbt)
    groups, _, numbers = plan(c, specs, available)
    return {"config": name, "tp": tp, "available": available, "max_model_len": mml,
            "max_num_batched_tokens": mnbt,
            "model": {"dtype": str(mc.dtype).removeprefix("torch."),
                      "layer_types": list(cfg.layer_types), "head_size": mc.get_head_size(),
                      "num_kv_heads_per_rank": kw["num_kv_heads"],
                      "sliding_window": cfg.sliding_window + extra},
            "expected": {"groups": [{"layers": list(g.layer_names),
                                     "spec": type(g.kv_cache_spec).__name__,
                                     "block_size": g.kv_cache_spec.block_size,
                                     "page_size_bytes": g.kv_cache_spec.page_size_bytes}
                                    for g in groups],
                         **numbers}}


def main() -> None:
    print(json.dumps({"generator": "vLLM 0.33.0 ModelConfig + kv_cache_planning (real code, "
                                   "CPU), layer-outer layout LBNHC, 2 batches in flight",
                      "cases": [case(*c) for c in CASES]}, indent=1))


if __name__ == "__main__":
    main()
