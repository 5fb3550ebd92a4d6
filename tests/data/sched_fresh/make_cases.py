"""Dev tool (not a test): write random scheduler cases for the oracle.

    python tests/data/sched_fresh/make_cases.py [--async] [--hybrid] OUT_DIR SEED...
    shared/oracle/tool/oracle sched OUT_DIR/NAME.trace.jsonl -o OUT_DIR/NAME.expected.jsonl

With --hybrid the config line gives random KV cache groups (full + sliding window, full +
chunked local, sliding window only, full + two sliding windows; cases named hseedN, or haseedN
with --async too), a max_model_len, and a pool that passes vLLM's start-up check.

With --knobs the config line also draws the vLLM options the other cases leave at their
defaults (prefix caching off, `max_num_active_seqs`, the adaptive long-prefill threshold, the
prefix-caching hash algorithm; cases named kseedN, khseedN, ...), from a generator of their own,
so every other draw of a seed stays as it was.

With --retention (and --hybrid) a case with a sliding-window group also draws vLLM's
`prefix_cache_retention_interval`: 0, None (dense) or a multiple of the block size (cases named
rhseedN, ...).

With --async the config line says "async_scheduling": true (vLLM's AsyncScheduler; the
cases are named aseedN) and some requests are follow-ups: an earlier request's prompt plus its
first outputs (the oracle's output-token formula), arriving while it decodes, so a block that
an in-flight decode completes is asked for (the h_followup_gap effect).

Each case mixes shared prefixes (so hits and evictions happen), staggered arrival steps,
priorities and a random config (small pools force preemption; chunked prefill on/off; a long
prefill threshold; watermark; max_model_len).
"""

import json
import random
import sys

OUTPUT_TOKEN_BASE = 1_000_000      # the oracle's fake model: base + index*(max_model_len+1) + p


def make(seed: int, follow_ups: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed)
    bs = rng.choice([4, 8, 16])
    cfg = {
        "block_size": bs,
        "num_blocks": rng.choice([24, 40, 64, 128]),
        "max_num_seqs": rng.choice([2, 4, 8, 16]),
        "max_num_batched_tokens": rng.choice([48, 64, 128, 256]),
        "max_model_len": rng.choice([256, 400, 512]),
        "long_prefill_token_threshold": rng.choice([0, 0, 24, 40]),
        "policy": rng.choice(["fcfs", "fcfs", "priority"]),
        "watermark": rng.choice([0.0, 0.0, 0.05]),
        "scheduler_reserve_full_isl": rng.choice([True, True, False]),
        "enable_chunked_prefill": rng.choice([True, True, False]),
        "kv_events": rng.choice([True, False]),
    }
    if not cfg["enable_chunked_prefill"]:
        # vLLM requires a budget of at least max_model_len when prompts cannot be chunked.
        cfg["max_num_batched_tokens"] = max(cfg["max_num_batched_tokens"], cfg["max_model_len"])
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(8, 80))] for _ in range(3)]
    reqs = []
    for i in range(rng.randrange(6, 14)):
        p = list(rng.choice(prefixes)) if rng.random() < 0.7 else []
        p += [rng.randrange(1, 30000) for _ in range(rng.randrange(1, 60))]
        p = p[: min(150, cfg["max_model_len"] - 80)]
        reqs.append({"id": f"s{seed}r{i}", "prompt_token_ids": p,
                     "output_length": rng.randrange(1, 60),
                     "arrival_step": rng.choice([0, 0, rng.randrange(0, 40)]),
                     "priority": rng.randrange(0, 3)})
    reqs.sort(key=lambda r: r["arrival_step"])
    if follow_ups:
        add_follow_ups(reqs, rng, cfg["max_model_len"], min(150, cfg["max_model_len"] - 80))
    # Every request must fit alone (else vLLM stalls): the pool holds the longest sequence,
    # plus a random margin that decides how much preemption there is.
    need = max(-(-(len(r["prompt_token_ids"]) + r["output_length"]) // bs) for r in reqs)
    need += int(cfg["watermark"] * cfg["num_blocks"]) + 2
    cfg["num_blocks"] = max(cfg["num_blocks"], need + rng.choice([0, 2, 8, need]))
    return cfg, reqs


def add_follow_ups(reqs: list[dict], rng: random.Random, max_model_len: int, cap: int) -> None:
    """Make some requests follow-ups: an earlier request's prompt plus its first outputs (the
    oracle's output-token formula), cut at ``cap`` tokens, arriving once those are out."""
    stride = max_model_len + 1
    for i in range(1, len(reqs)):
        if rng.random() < 0.4:
            j = rng.randrange(i)
            src = reqs[j]
            m = rng.randrange(1, src["output_length"] + 1)
            outs = [OUTPUT_TOKEN_BASE + j * stride + q for q in range(m)]
            reqs[i]["prompt_token_ids"] = (src["prompt_token_ids"] + outs)[:cap]
            reqs[i]["arrival_step"] = max(reqs[i]["arrival_step"], src["arrival_step"] + m)
    reqs.sort(key=lambda r: r["arrival_step"])     # stable: a source stays before


def write_cases(make_case, prefix: str) -> None:
    """The command line: ``[--async] [--hybrid] OUT_DIR SEED...``; ``make_case(seed, asyn)``
    gives a case's config and requests, written as ``OUT_DIR/<prefix>[h][a]seedN.trace.jsonl``."""
    args = sys.argv[1:]
    asyn = "--async" in args
    hybrid = "--hybrid" in args
    knobs = "--knobs" in args
    retention = "--retention" in args
    args = [a for a in args if a not in ("--async", "--hybrid", "--knobs", "--retention")]
    out, seeds = args[0], args[1:]
    name = (prefix + ("k" if knobs else "") + ("r" if retention else "") + ("h" if hybrid else "")
            + ("a" if asyn else "") + "seed")
    for s in seeds:
        cfg, reqs = make_case(int(s), asyn)
        if hybrid:
            add_groups(cfg, reqs, int(s), asyn)
        if knobs:
            add_knobs(cfg, int(s))
        if retention and any(g["type"] == "sliding_window" for g in cfg.get("groups", ())):
            bs = cfg["block_size"]
            cfg["prefix_cache_retention_interval"] = random.Random(int(s) * 7 + 11).choice(
                [0, None, None, bs, 2 * bs, 4 * bs, 16 * bs])
        if asyn:
            cfg["async_scheduling"] = True
        with open(f"{out}/{name}{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


def add_knobs(cfg: dict, seed: int) -> None:
    """vLLM options no other case draws: prefix caching off (a third of the cases), an active
    sequence cap below max_num_seqs, the adaptive long-prefill threshold (with and without a
    threshold), and each of vLLM 0.33's four prefix-caching hash algorithms."""
    rng = random.Random(seed * 104729 + 3)
    cfg["enable_prefix_caching"] = rng.choice([False, True, True])
    if rng.random() < 0.6:
        cfg["max_num_active_seqs"] = rng.randrange(1, cfg["max_num_seqs"] + 1)
    cfg["long_prefill_token_threshold_adaptive"] = rng.choice([True, False])
    if cfg["long_prefill_token_threshold_adaptive"] and rng.random() < 0.7:
        cfg["long_prefill_token_threshold"] = rng.choice([8, 24, 40, 100])
    cfg["hash_algo"] = rng.choice(["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"])


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pool_need(cfg: dict, asyn: bool) -> int:
    """The blocks vLLM's start-up check wants for one max_model_len request over ``cfg``'s
    groups: full attention the whole length, a window or chunk plus the tokens in flight."""
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    in_flight = (2 if asyn else 1) * cfg["max_num_batched_tokens"]
    need = 0
    for g in cfg["groups"]:
        if g["type"] == "full":
            need += cdiv(mml, bs)
        elif g["type"] == "sliding_window":
            need += cdiv(min(g["sliding_window"] - 1 + in_flight, mml), bs) + 1
        else:
            need += cdiv(min(g["attention_chunk_size"] + in_flight, mml), bs)
    return need


def add_groups(cfg: dict, reqs: list[dict], seed: int, asyn: bool) -> None:
    """Random hybrid groups, and a pool vLLM's start-up check accepts (one max_model_len
    request fits; the local groups reserve their window or chunk plus the tokens in flight)."""
    rng = random.Random(seed * 7919 + 1)
    bs = cfg["block_size"]
    window = rng.choice([bs, 2 * bs, 3 * bs, 4 * bs + 3, 48, 64])
    chunk = rng.choice([2, 4, 8]) * bs
    cfg["groups"] = rng.choice([
        [{"type": "full"}, {"type": "sliding_window", "sliding_window": window}],
        [{"type": "full"}, {"type": "chunked_local", "attention_chunk_size": chunk}],
        [{"type": "sliding_window", "sliding_window": window}],
        [{"type": "full"}, {"type": "sliding_window", "sliding_window": window},
         {"type": "sliding_window", "sliding_window": window}]])
    mml = cfg["max_model_len"]
    need = pool_need(cfg, asyn) + int(cfg["watermark"] * cfg["num_blocks"]) + 1
    cfg["num_blocks"] = max(cfg["num_blocks"], need + rng.choice([0, 1, 4, 16]))
    for r in reqs:     # a request must fit max_model_len with its outputs
        r["output_length"] = max(1, min(r["output_length"],
                                        mml - len(r["prompt_token_ids"]) - 1))


if __name__ == "__main__":
    write_cases(lambda seed, asyn: make(seed, follow_ups=asyn), "")
