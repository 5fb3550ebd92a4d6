# ruff: noqa
"""Record the real vLLM 0.33.0's answers for op scripts whose groups include the managers
vLLM 0.33 added (circular_buffer, sink_full, rswa) beside the oracle harness's kinds.

The oracle harness (`/work/shared/oracle/tool/harness.py`, `oracle harness trace`) takes only
full / sliding / chunked_local groups. This driver imports that harness and swaps its
`make_group_specs` for one that also builds CircularBufferSpec, SinkFullAttentionSpec and
RSWASpec; everything else (the ops, the output lines) is the harness's own.

Run (vLLM importable); writes NAME.expected.jsonl beside each NAME.ops.jsonl and drops from
the script the decodes the harness cannot run (after a refused chunk or decode):
  PYTHONPATH=$HOME/.cache/vllm-oracle/src ~/.cache/vllm-oracle/venv/bin/python \
      tests/data/managers_033/record.py tests/data/managers_033/*.ops.jsonl
"""
import json
import os
import sys

HARNESS = os.environ.get("ORACLE_TOOL", "/work/shared/oracle/tool")
sys.path.insert(0, HARNESS)
import harness  # noqa: E402
import torch  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    CircularBufferSpec,
    KVCacheGroupSpec,
    RSWASpec,
    SinkFullAttentionSpec,
)

_base_make_group_specs = harness.make_group_specs


def make_group_specs(groups, block_size):
    out = []
    for i, g in enumerate(groups):
        kind = g["type"]
        common = dict(block_size=block_size, num_kv_heads=1, head_size=1, dtype=torch.float32)
        if kind == "circular_buffer":
            spec = CircularBufferSpec(**common)
        elif kind == "sink_full":
            spec = SinkFullAttentionSpec(**common, sink_len=int(g["sink_len"]))
        elif kind == "rswa":
            spec = RSWASpec(**common, rswa_window=int(g["rswa_window"]))
        else:
            spec = _base_make_group_specs([g], block_size)[0].kv_cache_spec
        out.append(KVCacheGroupSpec([f"layer{i}"], spec))
    return out


harness.make_group_specs = make_group_specs

def runnable(d, op):
    """Whether the harness can run ``op``: it asserts a decode follows a finished prefill, which
    a refused prefill chunk or decode (a full pool) leaves unfinished."""
    if op["op"] != "decode" or op["id"] not in d.reqs:
        return True
    req = d.reqs[op["id"]]
    return req.num_computed_tokens == req.num_tokens


def record(path):
    """Run one script as `harness.run_trace` does, dropping the ops the harness cannot run from
    the script (rewritten in place), and write NAME.expected.jsonl beside it."""
    lines = [json.loads(x) for x in open(path).read().splitlines() if x.strip()]
    cfg, ops = lines[0]["config"], lines[1:]
    out_path = path.replace(".ops.jsonl", ".expected.jsonl")
    try:
        d = harness.Driver(cfg.get("groups"), block_size=cfg.get("block_size", 16),
                           num_blocks=cfg.get("num_blocks", 1024),
                           max_model_len=cfg.get("max_model_len", 32768),
                           hash_name=cfg.get("hash", "sha256"),
                           full_sequence_must_fit=cfg.get("full_sequence_must_fit", True),
                           kv_events=cfg.get("kv_events", False))
    except TypeError as e:
        # vLLM 0.33 cannot build some of these managers at all: record its refusal
        with open(out_path, "w") as out:
            out.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        return
    kept, answers = [], []
    for op in ops:
        if runnable(d, op):
            kept.append(op)
            answers.append(d.apply(op))
    answers.append(d.summary())
    with open(path, "w") as f:
        f.write(json.dumps({"config": cfg}) + "\n")
        f.writelines(json.dumps(op) + "\n" for op in kept)
    with open(out_path, "w") as out:
        out.writelines(json.dumps(a) + "\n" for a in answers)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        record(path)
