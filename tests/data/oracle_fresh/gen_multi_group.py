# Dev tool: writes multi-group op scripts (2-4 groups: two full, two windows, interleaved
# full/sliding) that drive kvcore to keep every op valid; the expected answers come from
# `shared/oracle/tool/oracle harness trace OPS` (the real vLLM). Usage: python gen_multi_group.py FIRST LAST
import json, random, sys
sys.path.insert(0, "/work/main")
from kvcore.script import parse_config, ScriptRunner
GROUPSETS = [
    [{"type": "full"}, {"type": "sliding_window", "sliding_window": 8}, {"type": "sliding_window", "sliding_window": 20}],
    [{"type": "sliding_window", "sliding_window": 6}, {"type": "sliding_window", "sliding_window": 13}],
    [{"type": "full"}, {"type": "full"}],
    [{"type": "sliding_window", "sliding_window": 12}, {"type": "full"}, {"type": "sliding_window", "sliding_window": 12}, {"type": "sliding_window", "sliding_window": 5}],
    [{"type": "full"}, {"type": "sliding_window", "sliding_window": 4}, {"type": "full"}],
]
def gen(seed, out):
    rng = random.Random(seed)
    groups = GROUPSETS[seed % len(GROUPSETS)]
    bs = rng.choice([2, 4, 8])
    nb = rng.randint(12, 60) * len(groups) // 2 + 1
    cfg = {"groups": groups, "block_size": bs, "num_blocks": nb, "hash": rng.choice(["sha256", "xxhash", "sha256_cbor", "xxhash_cbor"]),
           "max_model_len": 512, "full_sequence_must_fit": rng.random() < 0.7, "kv_events": rng.random() < 0.6}
    runner = ScriptRunner(parse_config(cfg, "x", 1))
    prefixes = [[rng.randrange(50) for _ in range(rng.randint(4, 40))] for _ in range(4)]
    ops = []
    def do(op):
        ops.append(op); runner.apply(op)
    for i in range(150):
        live = runner.reqs
        r = rng.random()
        if r < 0.35 or not live:
            p = rng.choice(prefixes)[: rng.randint(1, 40)] + [rng.randrange(50) for _ in range(rng.randint(0, 20))]
            op = {"op": "new", "id": f"q{i}", "prompt": p or [1]}
            if rng.random() < 0.4: op["num_tokens"] = rng.randint(1, max(1, len(p)))
            do(op)
        elif r < 0.55:
            rid = rng.choice(sorted(live)); op = {"op": "prefill", "id": rid}
            if rng.random() < 0.5: op["num_tokens"] = rng.randint(1, 12)
            do(op)
        elif r < 0.8:
            rid = rng.choice(sorted(live)); req = live[rid]
            if req.num_computed_tokens < req.num_tokens:
                do({"op": "prefill", "id": rid})
            for _ in range(rng.randint(1, 6)):
                if rid in live and live[rid].num_computed_tokens == live[rid].num_tokens:
                    do({"op": "decode", "id": rid, "token": rng.randrange(50)})
        else:
            do({"op": "free", "id": rng.choice(sorted(live))})
        if rng.random() < 0.05 and live: do({"op": "hashes", "id": rng.choice(sorted(live))})
    ops.append({"op": "summary"})
    with open(out, "w") as f:
        f.write(json.dumps({"config": cfg}) + "\n")
        for o in ops: f.write(json.dumps(o) + "\n")
for s in range(int(sys.argv[1]), int(sys.argv[2])):
    gen(s, f"/tmp/multi/multi-{s}.ops.jsonl")
