# ruff: noqa
"""Dev tool (not a test): random scheduler traces over the one KV cache group vLLM 0.33's
planner builds for a sparse MLA model (../sparse_mla/answers.json: every layer's latent and indexer
caches in one UniformTypeKVCacheSpecs group at block 64), for
../sched_chunked_mixed/oracle_chunked_mixed.py.

    python tests/data/sched_sparse_mla/make_sparse.py OUT_DIR FIRST LAST      # seeds FIRST..LAST-1

The group is a full-attention one to the scheduler (`"groups": [{"type": "full",
"block_size": 64}]`): prefix caching on 3 in 5, sync or async, max_model_len 512 or 1024, a
pool from what one max_model_len request needs to 40 blocks more (small 1 in 2: preemptions),
the requests of ../sched_spec_mamba/make_spec_mamba.py at block 64.
"""
import importlib.util, json, random, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", HERE.parent / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)

ANSWERS = json.loads((HERE.parent / "sparse_mla" / "answers.json").read_text())


def trace(seed):
    rng = random.Random(seed)
    # (one group in every case, a uniform-type one at one block size: its pages differ)
    ((kind, bs),) = {(g["spec"], g["block_size"]) for c in ANSWERS["cases"] for g in c["groups"]}
    assert kind == "UniformTypeKVCacheSpecs" and all(len(c["groups"]) == 1
                                                    for c in ANSWERS["cases"])
    caching = rng.random() < 0.6
    mml = rng.choice([512, 1024])
    need = -(-mml // bs)
    small = rng.random() < 0.5
    pool = need + 1 + (rng.choice([0, 1, 3]) if small else rng.choice([10, 20, 40]))
    groups = [{"type": "full", "block_size": bs}]
    cfg = {**make_spec_mamba.base_config(rng, bs, pool, mml, groups, caching),
           "async_scheduling": rng.random() < 0.5}
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, bs, mml, 0.35)]
    return f"v32_{seed}", lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
