# ruff: noqa
"""Record the real vLLM 0.33.0 KVCacheManager's answers for op scripts over DeepSeek-V4's five
KV cache groups, as the engine core hands them to the scheduler: tiny-dsv4's groups from
../answers.json (each group's first layer's spec: `generate_scheduler_kv_cache_config`),
rebuilt with vLLM's own SlidingWindowMLASpec / MLAAttentionSpec, scheduler block 256 (their
lcm), hash block 4 (their gcd: the block hasher's too), max_in_flight_tokens max_model_len
(the harness's, and kvcli script's).

The oracle harness (`/work/shared/oracle/tool/harness.py`; `ORACLE_TOOL` if elsewhere) runs
every group at one block size; this driver subclasses its Driver for the mixed blocks and keeps
its ops and output lines. As ../../managers_033/record.py, it drops from the script (rewritten)
the decodes the harness cannot run (after a refused chunk or decode).

  PYTHONPATH=$HOME/.cache/vllm-oracle/src ~/.cache/vllm-oracle/venv/bin/python \
      tests/data/deepseek_v4/managers/record.py tests/data/deepseek_v4/managers/*.ops.jsonl
"""
import json
import os
import sys
from math import gcd, lcm
from pathlib import Path

HARNESS = os.environ.get("ORACLE_TOOL", "/work/shared/oracle/tool")
sys.path.insert(0, HARNESS)
import harness  # noqa: E402
import torch  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheManager  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    KVCacheConfig,
    KVCacheGroupSpec,
    MLAAttentionSpec,
    SlidingWindowMLASpec,
)

ANSWERS = Path(__file__).resolve().parents[1] / "answers.json"
DTYPES = {"uint8": torch.uint8, "float32": torch.float32}


def v4_groups():
    """tiny-dsv4's groups at 1 GiB, each as the scheduler gets it (its first layer's spec)."""
    case = json.loads(ANSWERS.read_text())["cases"]["tiny-dsv4"]
    specs = {s["name"]: s for s in case["specs"]}
    plan = next(p for p in case["planning"] if "groups" in p)
    out = []
    for g in plan["groups"]:
        s = specs[g["layers"][0]]
        common = dict(block_size=s["block_size"], num_kv_heads=1, max_tp_shards=1,
                      head_size=s["head_size"], dtype=DTYPES[s["dtype"]],
                      alignment=s["alignment"], state_content_bytes=s["state_content_bytes"],
                      tokens_per_state=s["tokens_per_state"],
                      cache_dtype_str=s["cache_dtype_str"], model_version=s["model_version"])
        spec = (SlidingWindowMLASpec(**common, sliding_window=s["sliding_window"])
                if s["type"] == "SlidingWindowMLASpec" else MLAAttentionSpec(**common))
        out.append(KVCacheGroupSpec(list(g["layers"]), spec))
    return out


class V4Driver(harness.Driver):
    def __init__(self, cfg):
        groups = v4_groups()
        sizes = [g.kv_cache_spec.block_size for g in groups]
        self.block_size = gcd(*sizes)
        self.full_sequence_must_fit = cfg.get("full_sequence_must_fit", True)
        self.hash_fn = harness.vhash.get_hash_fn_by_name(cfg.get("hash", "sha256"))
        init_none_hash(self.hash_fn)
        self.block_hasher = get_request_block_hasher(self.block_size, self.hash_fn)
        self.cfg = KVCacheConfig(num_blocks=cfg["num_blocks"], kv_cache_tensors=[],
                                 kv_cache_groups=groups)
        mml = cfg.get("max_model_len", 32768)
        self.mgr = KVCacheManager(self.cfg, max_model_len=mml, scheduler_block_size=lcm(*sizes),
                                  hash_block_size=self.block_size, max_in_flight_tokens=mml,
                                  enable_caching=True, log_stats=True,
                                  enable_kv_cache_events=cfg.get("kv_events", False))
        self.kv_events = cfg.get("kv_events", False)
        self.reqs = {}
        self.sampling_params = SamplingParams(max_tokens=1 << 20)
        self.totals = dict(new=0, admitted=0, rejected=0, hit_tokens=0, prompt_tokens=0,
                           blocks_allocated=0, decode=0, decode_fail=0)
        self.stats_accum = dict(requests=0, queries=0, hits=0)


def runnable(d, op):
    if op["op"] != "decode" or op["id"] not in d.reqs:
        return True
    req = d.reqs[op["id"]]
    return req.num_computed_tokens == req.num_tokens


def record(path):
    lines = [json.loads(x) for x in open(path).read().splitlines() if x.strip()]
    cfg, ops = lines[0]["config"], lines[1:]
    d = V4Driver(cfg)
    kept, answers = [], []
    for op in ops:
        if runnable(d, op):
            kept.append(op)
            answers.append(d.apply(op))
    answers.append(d.summary())
    with open(path, "w") as f:
        f.write(json.dumps({"config": cfg}) + "\n")
        f.writelines(json.dumps(op) + "\n" for op in kept)
    with open(path.replace(".ops.jsonl", ".expected.jsonl"), "w") as out:
        out.writelines(json.dumps(a) + "\n" for a in answers)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        record(path)
