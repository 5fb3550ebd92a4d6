# ruff: noqa
"""Dev tool (not a test): random scheduler traces over tiny-dsv4's five KV cache groups, for
./oracle_dsv4_sched.py (vLLM's answers) and tests/test_deepseek_v4_sched.py (kvcli's replay).

    python tests/data/deepseek_v4/sched/make_dsv4_sched.py OUT_DIR FIRST LAST

(seeds FIRST..LAST-1)

The config line's `groups` names the model (`[{"type": "deepseek_v4", "model": "tiny-dsv4"}]`):
the oracle builds vLLM's groups for it, kvcli's replay takes `--model-config` in its place.
Block 256 (the scheduler's, the only `--block-size` kvcli takes for V4), max_model_len 1,024 or
2,048, sync or async, prefix caching on 3 in 4; the pool from what one max_model_len request
needs (vLLM's start-up check) plus 0 to 3 blocks (1 in 2: preemptions) or 40 to 400 more; the
requests of ../../sched_spec_mamba/make_spec_mamba.py at block 256 (shared prefixes, resends,
truncations: prompts past 1,000 tokens, chunked by budgets of 48 to 256).
"""
import importlib.util, json, random, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "make_spec_mamba", HERE.parents[1] / "sched_spec_mamba" / "make_spec_mamba.py")
make_spec_mamba = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_spec_mamba)

BLOCK = 256
# tiny-dsv4's groups to the scheduler (../answers.json): (block, window or None)
GROUPS = [(64, 128), (64, 128), (256, None), (8, 128), (4, 8)]


def cdiv(a, b):
    return -(-a // b)


def need(mml, in_flight):
    """Blocks one max_model_len request takes (vLLM's max_memory_usage_bytes, each group)."""
    return sum(cdiv(mml, bs) if w is None else cdiv(min(w - 1 + in_flight, mml), bs) + 1
               for bs, w in GROUPS)


def trace(seed):
    rng = random.Random(seed)
    caching = rng.random() < 0.75
    mml = rng.choice([1024, 2048])
    asyn = rng.random() < 0.5
    small = rng.random() < 0.5
    cfg = make_spec_mamba.base_config(rng, BLOCK, 0, mml,
                                      [{"type": "deepseek_v4", "model": "tiny-dsv4"}], caching)
    in_flight = cfg["max_num_batched_tokens"] * (2 if asyn else 1)
    cfg["num_blocks"] = need(mml, in_flight) + 1 + (
        rng.choice([0, 1, 3]) if small else rng.choice([40, 100, 400]))
    cfg["async_scheduling"] = asyn
    lines = [json.dumps({"config": cfg}), *make_spec_mamba.requests(rng, BLOCK, mml, 0.35)]
    return f"dsv4_{seed}", lines


if __name__ == "__main__":
    make_spec_mamba.write_traces(trace, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
