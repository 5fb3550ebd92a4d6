"""Dev tool (not a test): random hash-id (Mooncake-format) scheduler cases for the oracle.

    python tests/data/sched_fresh/make_hash_cases.py [FLAGS] OUT_DIR SEED...
    shared/oracle/tool/oracle sched OUT_DIR/NAME.trace.jsonl -o OUT_DIR/NAME.expected.jsonl

Each case is written twice: `NAME.hash.jsonl` (Mooncake lines: `hash_ids`, a per-line
`block_size` TB, `input_length`, `arrival_step`, `priority`) and `NAME.trace.jsonl`, the same
prompts as token ids for the oracle, which reads token ids only. The token at prompt position p
is `ids[p // TB] * TB + p % TB` (kvcore/traces/request.py's rule), so kvcli's replay of the
hash form must give the oracle's answer to the token form. That puts kvcli's hash-id path under
the oracle: the Mooncake reader, and in the compiled build the prompt-hash thread
(`kvcore/engine/hash_ahead.py`), which only takes hash-id prompts whose TB is a multiple of the
block size (TB is drawn from 1, 2, 3 and 4 blocks and one size that is not a multiple).

Requests are conversations: a turn is an earlier turn's ids plus new ones, or a shared head
plus new ones; the last trace block is cut short at random. Flags (name prefix in brackets):
--async ("a"), --hybrid ("h": `make_cases.add_groups`), --small (a quarter of the requests and
the smallest pool that fits: preemptions), --huge ("u": 600-2500 requests, over several of the
replay's read-ahead chunks), --shuffle ("s": file order no longer arrival order, timestamps
unrelated to arrival steps), --offload ("o": a CPU tier, keys as offload_fresh/make_traces.py;
answer with `oracle sched_offload`), --edges ("e": trace block ids whose tokens cross 256,
65536 and 2**31), --knobs ("k": `make_cases.add_knobs`, prefix caching off, active sequence caps,
the adaptive threshold, hash algorithms). Cases are named [e][o][u][s][k]b[h][a]seedN.
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_cases import add_groups, add_knobs

FLAGS = ("--async", "--hybrid", "--huge", "--shuffle", "--offload", "--small", "--edges",
         "--knobs")


def make(seed: int, flags: set[str]) -> tuple[dict, list[dict], int]:
    """The config, the requests (ids, prompt length, outputs, step, priority) and TB."""
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16])
    cfg = {"block_size": bs, "num_blocks": rng.choice([24, 48, 96, 200]),
           "max_num_seqs": rng.choice([2, 4, 8, 16, 32]),
           "max_num_batched_tokens": rng.choice([64, 128, 256, 512]),
           "max_model_len": rng.choice([256, 400, 512]),
           "long_prefill_token_threshold": rng.choice([0, 0, 24, 40]),
           "policy": rng.choice(["fcfs", "fcfs", "priority"]),
           "watermark": rng.choice([0.0, 0.0, 0.05]),
           "scheduler_reserve_full_isl": rng.choice([True, True, False]),
           "enable_chunked_prefill": rng.choice([True, True, False]),
           "kv_events": rng.choice([True, False])}
    if not cfg["enable_chunked_prefill"]:
        # vLLM requires a budget of at least max_model_len when prompts cannot be chunked.
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], cfg["max_model_len"])
    tb = rng.choice([bs, 2 * bs, 4 * bs, 3 * bs, bs + 4 if bs > 4 else 6])
    mml = cfg["max_model_len"]
    cap = mml - 60
    next_id = [1]
    # --edges: ids from bands whose tokens (id * TB + j) cross pickle's integer opcodes (256,
    # 65536) and 2**31, past which a prompt is no longer the prompt-hash thread's
    bands = [1, 256 // tb - 2, 65536 // tb - 3, (1 << 31) // tb - 40]
    band_rng = random.Random(seed * 13 + 5) if "--edges" in flags else None

    def fresh(n: int) -> list[int]:
        if band_rng is not None:
            b = band_rng.randrange(len(bands))
            out = list(range(bands[b], bands[b] + n))
            bands[b] += n
            return out
        out = list(range(next_id[0], next_id[0] + n))
        next_id[0] += n
        return out

    huge = "--huge" in flags
    heads = [fresh(rng.randrange(1, 5)) for _ in range(rng.randrange(1, 4))]
    convs: list[list[int]] = []
    reqs = []
    step = 0
    n = rng.randrange(600, 2500) if huge else rng.randrange(80, 300)
    if "--small" in flags:
        n //= 4
    if huge:
        cfg["num_blocks"] *= 4
        # vLLM refuses a budget below max_num_seqs (SchedulerConfig.verify_max_model_len)
        cfg["max_num_seqs"] = min(rng.choice([8, 32, 64, 128]), cfg["max_num_batched_tokens"])
    for i in range(n):
        if convs and rng.random() < 0.5:
            ids = rng.choice(convs) + fresh(rng.randrange(1, 4))
        else:
            ids = (list(rng.choice(heads)) if rng.random() < 0.7 else []) \
                + fresh(rng.randrange(1, 5))
        while len(ids) * tb > cap:
            ids = ids[:-1]
        if not ids:
            ids = fresh(1)
        convs.append(ids)
        if len(convs) > 12:
            convs.pop(rng.randrange(len(convs)))
        n_in = max(len(ids) * tb - rng.randrange(0, tb), (len(ids) - 1) * tb + 1)
        out = rng.choice([1, rng.randrange(1, 20), rng.randrange(1, 120)])
        out = max(1, min(out, mml - n_in - 1))
        step += rng.choice([0, 0, 0, 0, 1, 2, 4] if huge else [0, 0, 0, 1, 2, 5, 15])
        reqs.append({"id": f"b{seed}r{i}", "ids": ids, "n_in": n_in, "out": out,
                     "step": step, "priority": rng.randrange(0, 3)})
    # every request must fit alone (else vLLM stalls)
    need = max(-(-(r["n_in"] + r["out"]) // bs) for r in reqs)
    need += int(cfg["watermark"] * cfg["num_blocks"]) + 2
    cfg["num_blocks"] = max(cfg["num_blocks"], need + rng.choice([0, 2, 8, need]))
    if "--small" in flags:
        cfg["num_blocks"] = need + rng.choice([0, 2, 8])
    if "--hybrid" in flags:
        fake = [{"prompt_token_ids": [0] * r["n_in"], "output_length": r["out"]} for r in reqs]
        add_groups(cfg, fake, seed, "--async" in flags)
        for r, f in zip(reqs, fake):
            r["out"] = f["output_length"]
    if "--offload" in flags:
        add_tier(cfg, random.Random(seed * 31 + 7), need)
    if "--knobs" in flags:
        add_knobs(cfg, seed)
    if "--async" in flags:
        cfg["async_scheduling"] = True
    return cfg, reqs, tb


def add_tier(cfg: dict, rng: random.Random, need: int) -> None:
    """A CPU tier's keys (offload_fresh/make_traces.py's draws) and a halved GPU pool."""
    bs = cfg["block_size"]
    cfg.update({"enable_chunked_prefill": True,
                "kv_offloading_size_chunks": rng.choice([3, 6, 12, 24, 64]),
                "eviction_policy": rng.choice(["lru", "arc"]),
                "load_steps": rng.choice([1, 1, 2, 3]), "store_steps": rng.choice([1, 1, 2, 4])})
    bpc = rng.choice([1, 1, 2, 4])
    if bpc > 1:
        cfg["offload_block_size"] = bpc * bs
    if rng.random() < 0.2:
        cfg["store_threshold"] = 2
    if rng.random() < 0.2:
        cfg["offload_prompt_only"] = False
    if rng.random() < 0.2:
        cfg["sync_load_budget_bytes"] = rng.choice([1 << 20, 1 << 24, 1 << 30])
    cfg["num_blocks"] = max(need, cfg["num_blocks"] // 2)


def shuffle(reqs: list[dict], seed: int) -> None:
    """Swap a third of the lines (within 600 of each other) and draw unrelated timestamps."""
    rng = random.Random(seed + 99)
    for _ in range(len(reqs) // 3):
        i, j = rng.randrange(len(reqs)), rng.randrange(len(reqs))
        if abs(i - j) < 600:
            reqs[i], reqs[j] = reqs[j], reqs[i]
    for r in reqs:
        r["ts"] = rng.randrange(0, 100000)


def write(out: str, name: str, cfg: dict, reqs: list[dict], tb: int) -> None:
    with open(f"{out}/{name}.trace.jsonl", "w") as f, open(f"{out}/{name}.hash.jsonl", "w") as g:
        f.write(json.dumps({"config": cfg}) + "\n")
        g.write(json.dumps({"config": cfg}) + "\n")
        for r in reqs:
            ids, ts = r["ids"], r.get("ts", r["step"] * 10)
            toks = [ids[p // tb] * tb + p % tb for p in range(r["n_in"])]
            f.write(json.dumps({"id": r["id"], "timestamp": ts, "prompt_token_ids": toks,
                                "output_length": r["out"], "arrival_step": r["step"],
                                "priority": r["priority"]}) + "\n")
            g.write(json.dumps({"id": r["id"], "timestamp": ts, "input_length": r["n_in"],
                                "output_length": r["out"], "hash_ids": ids, "block_size": tb,
                                "arrival_step": r["step"], "priority": r["priority"]}) + "\n")


def main() -> None:
    flags = {a for a in sys.argv[1:] if a in FLAGS}
    args = [a for a in sys.argv[1:] if a not in FLAGS]
    out, seeds = args[0], args[1:]
    for s in seeds:
        cfg, reqs, tb = make(int(s), flags)
        if "--shuffle" in flags:
            shuffle(reqs, int(s))
        name = "".join(p for f, p in (("--edges", "e"), ("--offload", "o"), ("--huge", "u"),
                                      ("--shuffle", "s"), ("--knobs", "k"))
                       if f in flags) + "b" + "".join(
            p for f, p in (("--hybrid", "h"), ("--async", "a")) if f in flags) + "seed" + s
        write(out, name, cfg, reqs, tb)


if __name__ == "__main__":
    main()
