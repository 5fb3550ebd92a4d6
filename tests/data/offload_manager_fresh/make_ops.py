"""Random op scripts for the CPU tier's manager (the oracle's `offload_manager` format).

    python3 make_ops.py --seeds 1-12 --out-dir .
    oracle offload_manager --batch $(for f in seed*.ops.jsonl; do echo $f=${f%.ops.jsonl}.expected.jsonl; done)

(`oracle`: the vLLM oracle's command, a development tool the tests never run; tests/data/README.md
says where it lives.)

Each script runs a few requests over a small key space on a small tier, so offers fail, victims
are protected, ghosts adapt, loads pin, stores fail, the threshold table overflows. Keys stay
valid for vLLM's asserts most of the time; a few ops are misuse on purpose (a load of a missing
or pending chunk, a second complete_load), which vLLM answers with an assertion.
"""

from __future__ import annotations

import argparse
import json
import random


def script(seed: int) -> list[dict]:
    rng = random.Random(seed)
    cfg = {"num_chunks": rng.choice([3, 4, 6, 8]), "eviction_policy": rng.choice(["lru", "arc"])}
    if rng.random() < 0.3:
        cfg["store_threshold"] = 2
        cfg["max_tracker_size"] = rng.choice([3, 5, 64])
    if rng.random() < 0.25:
        cfg["drain_events"] = "explicit"
    ops: list[dict] = [{"config": cfg}]
    n_keys = cfg["num_chunks"] * 3
    # a request is a prefix chain of keys: positions 16, 32, ... ; some share heads
    chains = [[rng.randrange(n_keys) + 1 for _ in range(rng.randint(1, 6))] for _ in range(8)]
    for c in chains:                       # distinct keys within one chain
        seen: list[int] = []
        for k in c:
            if k not in seen:
                seen.append(k)
        c[:] = seen
    live: dict[str, list[int]] = {}
    pending: dict[str, list[int]] = {}     # req -> keys of its last successful store
    loading: dict[str, list[int]] = {}
    ready: set[int] = set()
    n_req = 0
    for _ in range(rng.randint(30, 70)):
        r = rng.random()
        if r < 0.15 or not live:
            n_req += 1
            req = f"r{n_req}"
            chain = list(rng.choice(chains))
            if rng.random() < 0.3:
                chain = chain[: rng.randint(1, len(chain))]
            live[req] = chain
            op = {"op": "new_request", "req": req, "keys": chain,
                  "pos": [16 * (i + 1) for i in range(len(chain))]}
            if rng.random() < 0.15:       # positions missing: first-observation order
                op = {"op": "new_request", "req": req}
            ops.append(op)
            continue
        req = rng.choice(sorted(live))
        chain = live[req]
        if r < 0.45:
            lo = rng.randrange(len(chain))
            keys = chain[lo: rng.randint(lo + 1, len(chain))]
            ops.append({"op": "prepare_store", "req": req, "keys": keys})
            pending.setdefault(req, []).extend(keys)
        elif r < 0.6 and pending.get(req):
            keys = pending.pop(req)
            ok = rng.random() > 0.1
            ops.append({"op": "complete_store", "req": req, "keys": keys, **({} if ok else
                                                                               {"success": False})})
            if ok:
                ready.update(keys)
        elif r < 0.68:
            ops.append({"op": "lookup", "req": req, "keys": chain})
        elif r < 0.78:
            n = 0
            while n < len(chain) and chain[n] in ready:
                n += 1
            if n == 0 and rng.random() < 0.7:
                continue
            keys = chain[: max(n, 1)] if rng.random() > 0.1 else chain[:n + 1]
            ops.append({"op": "prepare_load", "req": req, "keys": keys})
            loading[req] = keys
        elif r < 0.86 and loading.get(req):
            ops.append({"op": "complete_load", "req": req, "keys": loading.pop(req)})
        elif r < 0.93:
            ops.append({"op": "request_finished", "req": req})
            del live[req]
        elif r < 0.95:
            ops.append({"op": "touch", "req": req, "keys": chain})
        elif r < 0.97:
            ops.append({"op": "stats"})
        elif r < 0.985:
            ops.append({"op": "state"})
        elif r < 0.99 and cfg.get("drain_events") == "explicit":
            ops.append({"op": "take_events"})
        elif r < 0.995:
            ops.append({"op": "reset"})
            ready.clear()
            pending.clear()
            loading.clear()
    ops.append({"op": "stats"})
    ops.append({"op": "state"})
    return ops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1-12")
    ap.add_argument("--out-dir", default=".")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    for seed in range(int(lo), int(hi or lo) + 1):
        with open(f"{a.out_dir}/seed{seed}.ops.jsonl", "w") as f:
            f.writelines(json.dumps(op) + "\n" for op in script(seed))


if __name__ == "__main__":
    main()
