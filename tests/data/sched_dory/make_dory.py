# ruff: noqa
"""Dev tool (not a test): random scheduler traces over the KV cache groups vLLM 0.33's planner
builds for a small Dory model (../refused_lifted/tiny-dory.config.json: 8 blocks, the
attention ones 0, 2, 4, 6, blocks 2 and 4 recurrent over 3 loops: seven sliding groups of 64
tokens and a full one, a layer each), for
../sched_chunked_mixed/oracle_chunked_mixed.py.

    R=~/.cache/vllm-oracle
    PYTHONPATH=$R/src:. VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python \\
        tests/data/sched_dory/make_dory.py OUT_DIR FIRST LAST      # seeds FIRST..LAST-1

The per-layer specs are kvcli's (`read_hf_config`, `layer_specs` at block 16: ../refused_lifted/
proves them equal to vLLM's built class, in its registration order); the groups are vLLM's own
`get_kv_cache_groups` over them, into the config line's `groups`. The rest as
../sched_mimo/make_mimo.py: prefix caching on 3 in 5, sync or async, max_model_len 256 or 384,
a pool from what one max_model_len request needs to 40 blocks more.
"""

import importlib.util
import json
import math
import random
import sys
from pathlib import Path
from types import SimpleNamespace as NS

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / "refused_lifted" / "tiny-dory.config.json"
sys.path.insert(0, str(HERE.parents[2]))
_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", HERE.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)


def vllm_groups(mml: int, model: Path = MODEL) -> list[dict]:
    """vLLM's groups over kvcli's specs of `model` (full and sliding-window layers), as the
    config line's `groups`."""
    import torch
    from vllm.v1 import kv_cache_interface as V
    from vllm.v1.core import kv_cache_planning as P
    from vllm.v1.kv_cache_layout import KVCacheLayout
    from kvcore.models import layer_specs, read_hf_config
    from kvcore.specs import SlidingWindowSpec

    g = read_hf_config(json.loads(model.read_text()))
    vs = {}
    for name, s in layer_specs(g, max_model_len=mml).items():
        kw = dict(block_size=s.block_size, num_kv_heads=s.num_kv_heads, head_size=s.head_size,
                  dtype=torch.bfloat16)
        vs[name] = (V.SlidingWindowSpec(**kw, sliding_window=s.sliding_window)
                    if isinstance(s, SlidingWindowSpec) else V.FullAttentionSpec(**kw))
    cache = NS(num_gpu_blocks_override=None, prefix_cache_retention_interval=None,
               get_resolved_kv_cache_layout=lambda: KVCacheLayout.LBNHC, mamba_cache_mode="align")
    c = NS(scheduler_config=NS(disable_hybrid_kv_cache_manager=False, max_num_batched_tokens=256),
           cache_config=cache, model_config=NS(max_model_len=mml),
           attention_config=NS(hisparse_config=None), max_in_flight_tokens=512,
           parallel_config=NS(decode_context_parallel_size=1))
    out = []
    for grp in P.get_kv_cache_groups(c, vs):
        s = grp.kv_cache_spec
        d = {"type": "sliding_window", "sliding_window": s.sliding_window} \
            if isinstance(s, V.SlidingWindowSpec) else {"type": "full"}
        out.append({**d, "block_size": s.block_size})
    return out


def trace(seed: int, model: Path = MODEL, name: str = "dory") -> tuple[str, list[str]]:
    """Case `name`_`seed` over `model`'s groups (../sched_iquest/make_iquest.py's too)."""
    rng = random.Random(seed)
    caching = rng.random() < 0.6
    mml = rng.choice([256, 384])
    groups = vllm_groups(mml, model)
    lcm = math.lcm(*(g["block_size"] for g in groups))
    need = sum(-(-mml // g["block_size"]) for g in groups)
    small = rng.random() < 0.5
    pool = need + 1 + (rng.choice([0, 1, 3]) if small else rng.choice([10, 20, 40]))
    cfg = {**make_spec_mamba.base_config(rng, 16, pool, mml, groups, caching),
           "async_scheduling": rng.random() < 0.5}
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, lcm, mml, 0.35)]
    return f"{name}_{seed}", lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
