# ruff: noqa
"""Dev tool (not a test): scheduler cases that draw the knobs together (2026-12-08 campaign).

    python3 tests/data/sched_wide/make_wide.py [--spec|--eagle] [--hybrid|--mamba] [--lora]
        [--pp N] [--long] [--unclamped] OUT_DIR SEED...

Odd seeds async, even sync. Each case draws, at once, what the earlier generators drew one or
two at a time: budgets on the edges (1 + K, bs - 1, bs, bs + 1, 2 bs, mml - 1, mml),
`max_num_seqs` 1-3 beside 8-32, `max_num_active_seqs`, long-prefill thresholds of 1 to the
budget (adaptive or not), FCFS or priorities with ties and negatives, a watermark, chunked
prefill off, prefix caching off, and requests that stop at `max_model_len` (prompts at
mml - 1, mml - bs, outputs asking past it), one-token prompts, whole-block prompts, bursts of
copies, follow-ups (a prompt plus its source's first outputs, chains too) in both modes, on a
pool that holds the longest request alone plus a margin of 0 to 3 blocks.

--hybrid: random KV cache groups (full + sliding / chunked local, reordered, two windows,
windows of 1 to 2 bs + 1) and a pool that passes vLLM's start-up check (a case vLLM refuses
at start-up is kept: kvcli must refuse it too). --spec: n-gram speculative decoding (K 1-5,
an acceptance rate, a seed), answered by ../sched_spec/oracle_spec.py; thresholds then stay
>= 1 + K, since below that vLLM asserts on a padded admission (sched_spec's
threshold_cuts_padding). --eagle: EAGLE-3 instead (K 1-3, legacy hashes half the time, the
draft's group flagged), answered by ../sched_spec_eagle/oracle_eagle_hybrid.py. --mamba: 1-3
Mamba groups beside a full-attention group (blocks of 8-32), answered by ../oracle_mamba.py
(the config line says async). --lora: adapters and cache salts on the requests (answered by
a tool copy patched by ../sched_fresh_lora/patch_oracle_lora.py, and for --spec
../sched_spec_lora/patch_oracle_spec_lora.py). --pp N: `pipeline_parallel_size` N
(../sched_pp/oracle_pp.py). --long: four times the requests. With --spec or --eagle and
--mamba: ../sched_spec_mamba/oracle_spec_mamba.py. --unclamped (with drafts): thresholds below
1 + K stay, and vLLM asserts where one cuts a padded admission (kvcli must refuse there too).
Names: w[s|e][m][l][pN][h][L][u][a]seedN.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sched_fresh"))
from make_cases import pool_need  # the start-up check's blocks

UNCLAMPED = False        # --unclamped: a threshold below 1 + K stays (vLLM may assert)
LONG = 1                 # --long: four times the requests (4-84), preemption the rule
OUT_BASE = 1_000_000     # the oracle's fake model: base + file_index*(mml+1) + position


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def groups_for(rng: random.Random, bs: int) -> list[dict]:
    def sw():
        w = rng.choice([1, 2, bs - 1, bs, bs + 1, 2 * bs + 1, 3 * bs, 33])
        return {"type": "sliding_window", "sliding_window": max(1, w)}

    def cl():
        return {"type": "chunked_local", "attention_chunk_size": rng.choice([1, 2, 4]) * bs}

    full = {"type": "full"}
    return rng.choice([[full, sw()], [sw(), full], [full, cl()], [cl(), full],
                       [full, sw(), cl()], [sw(), sw()], [full, sw(), sw()], [sw()]])


def make(seed: int, asyn: bool, spec: bool, hybrid: bool,
         eagle: bool = False, mamba: bool = False) -> tuple[dict, list[dict]]:
    rng = random.Random(seed * 1_000_003 + 17)
    bs = rng.choice([2, 4, 8, 16])
    mml = rng.choice([64, 96, 100, 128, 200, 256, 333])
    k = rng.randint(1, 5) if spec else 0
    if mamba:
        bs = rng.choice([8, 16, 32])
        mml = max(mml, 4 * bs)
    if eagle:
        k = 1 + (k - 1) % 3           # EAGLE's K of 1-3, as sched_spec_eagle draws it
    chunked = rng.random() < 0.8
    budget = rng.choice([1 + k, max(1, bs - 1), bs, bs + 1, 2 * bs, mml - 1, mml,
                         rng.randrange(8, 300)])
    budget = max(budget, 1 + k)
    if not chunked:
        budget = max(budget, mml)
    # (vLLM refuses max_num_seqs above the budget: SchedulerConfig's check)
    max_seqs = min(rng.choice([1, 2, 3, 8, 32]), budget)
    cfg = {
        "block_size": bs, "num_blocks": 0, "max_num_seqs": max_seqs,
        "max_num_batched_tokens": budget, "max_model_len": mml,
        "long_prefill_token_threshold": rng.choice([0, 0, 1, 2, bs - 1, bs, 24, budget]),
        "policy": rng.choice(["fcfs", "priority", "priority"]),
        "watermark": rng.choice([0.0, 0.0, 0.01, 0.1]),
        "scheduler_reserve_full_isl": rng.choice([True, False]),
        "enable_chunked_prefill": chunked,
        "kv_events": rng.random() < 0.5,
    }
    if spec and not UNCLAMPED and 0 < cfg["long_prefill_token_threshold"] < 1 + k:
        cfg["long_prefill_token_threshold"] = 1 + k
    if rng.random() < 0.3:
        cfg["max_num_active_seqs"] = rng.randrange(1, max_seqs + 1)
    if rng.random() < 0.3:
        cfg["long_prefill_token_threshold_adaptive"] = True
    if rng.random() < 0.15:
        cfg["enable_prefix_caching"] = False
    reqs = requests(rng, seed, bs, mml)
    cfg["num_blocks"] = pool(rng, cfg, reqs, asyn, hybrid, k)
    if mamba:
        add_mamba(rng, cfg, k)
    if spec:
        cfg["num_speculative_tokens"] = k
        cfg["spec_acceptance_rate"] = rng.choice([0.0, 0.3, 0.6, 0.9, 1.0])
        cfg["spec_seed"] = rng.randrange(1000)
    if eagle:
        add_eagle(rng, cfg)
    return cfg, reqs


def add_eagle(rng: random.Random, cfg: dict) -> None:
    """EAGLE-3 (oracle_eagle_hybrid.py): the rate kept in 0.3-0.9, as sched_spec_eagle_hybrid
    folds it; the legacy hashes (and the EAGLE block drop) half the time; with groups, the
    draft's layers flagged in the first full-attention group half the time (always in a legacy
    case with a chunked-local group: unflagged, vLLM would drop there and asserts)."""
    cfg["spec_method"] = "eagle3"
    cfg["spec_acceptance_rate"] = min(0.9, max(0.3, cfg["spec_acceptance_rate"]))
    legacy = rng.random() < 0.5
    groups = cfg.get("groups") or []
    full = [i for i, g in enumerate(groups) if g["type"] == "full"]
    chunked = any(g["type"] == "chunked_local" for g in groups)
    if legacy and chunked and not full:
        legacy = False
    if legacy:
        cfg["disable_lookahead_block_hashes"] = True
    if full and len(groups) > 1 and (rng.random() < 0.5 or (legacy and chunked)):
        cfg["eagle_groups"] = [full[0]]


def add_mamba(rng: random.Random, cfg: dict, k: int = 0) -> None:
    """1-3 Mamba groups (Mamba1, or Mamba2 with a prefill checkpoint block, with a retention
    interval) and a full-attention group at a random place (../oracle_mamba.py), and a pool
    that passes vLLM's start-up check, as ../sched_spec_mamba/make_spec_mamba.py sizes it (each
    Mamba group keeps K speculative blocks more). With drafts the retention interval is 0 or
    dense: EAGLE's scheduler block can be coarser than the block, and vLLM refuses an
    interval off its grid."""
    nm, ckpt = rng.choice([1, 2, 3]), rng.random() < 0.5
    groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}] * nm
    groups.insert(rng.randrange(nm + 1), {"type": "full"})
    cfg["groups"] = groups
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    need = (nm * (2 + int(ckpt) + k) + cdiv(mml, bs) + 1
            + int(cfg["watermark"] * cfg["num_blocks"]))
    cfg["num_blocks"] = max(cfg["num_blocks"] + nm * 3, need + rng.choice([0, 1, 4]))
    if ckpt:
        bs = cfg["block_size"]
        cfg["prefix_cache_retention_interval"] = rng.choice([0, 0, None, 2 * bs])
        if k and cfg["prefix_cache_retention_interval"]:
            cfg["prefix_cache_retention_interval"] = None


def requests(rng: random.Random, seed: int, bs: int, mml: int) -> list[dict]:
    prefixes = [[rng.randrange(1, 30000) for _ in range(rng.randrange(1, 4 * bs + 9))]
                for _ in range(3)]
    reqs: list[dict] = []
    step = 0
    for i in range(rng.randrange(4, 22) * LONG):
        shape = rng.random()
        if shape < 0.12:
            p = [rng.randrange(1, 30000)]                                  # one token
        elif shape < 0.24:
            p = [rng.randrange(1, 30000) for _ in range(mml - rng.choice([1, 2, bs]))]
        elif shape < 0.34 and reqs:
            p = list(rng.choice(reqs)["prompt_token_ids"])                 # a copy
        else:
            p = list(rng.choice(prefixes)) if rng.random() < 0.7 else []
            p += [rng.randrange(1, 30000) for _ in range(rng.randrange(0, 3 * bs + 5))]
            if rng.random() < 0.3:
                p = p[: max(bs, len(p) // bs * bs)]                        # whole blocks
        p = p[: mml - 1] or [7]
        out = rng.choice([1, 2, rng.randrange(1, 40), mml])                # mml: stops at it
        step += rng.choice([0, 0, 0, 1, 3, 9])
        reqs.append({"id": f"w{seed}r{i}", "prompt_token_ids": p, "output_length": out,
                     "arrival_step": step, "priority": rng.randrange(-2, 3)})
    follow_ups(reqs, rng, mml)
    return reqs


def follow_ups(reqs: list[dict], rng: random.Random, mml: int) -> None:
    """Some requests become an earlier one's prompt plus its first outputs (chains allowed),
    arriving once those are out; file order (the fake tokens' index) stays as it is."""
    for i in range(1, len(reqs)):
        if rng.random() < 0.35:
            j = rng.randrange(i)
            src = reqs[j]
            room = mml - 1 - len(src["prompt_token_ids"])
            if room < 1:
                continue
            m = rng.randrange(1, min(src["output_length"], room, 40) + 1)
            outs = [OUT_BASE + j * (mml + 1) + q for q in range(m)]
            reqs[i]["prompt_token_ids"] = (src["prompt_token_ids"] + outs)[: mml - 1]
            reqs[i]["arrival_step"] = max(reqs[i]["arrival_step"], src["arrival_step"] + m)
    for i in range(1, len(reqs)):
        reqs[i]["arrival_step"] = max(reqs[i]["arrival_step"], reqs[i - 1]["arrival_step"])


def pool(rng: random.Random, cfg: dict, reqs: list[dict], asyn: bool, hybrid: bool,
         k: int = 0) -> int:
    """The longest request alone (capped at mml, with K lookahead slots), the watermark's
    blocks and the null block, plus 0-3 blocks (or double): a small pool, so preemption is the
    rule."""
    bs, mml = cfg["block_size"], cfg["max_model_len"]
    longest = max(min(len(r["prompt_token_ids"]) + r["output_length"], mml) for r in reqs)
    need = cdiv(longest + k, bs) + 2
    n = need + rng.choice([0, 1, 3, need])
    while int(cfg["watermark"] * n) + need > n:
        n += 1
    n += int(cfg["watermark"] * n)
    if hybrid:
        cfg["groups"] = groups_for(rng, bs)
        n = max(n, pool_need(cfg, asyn) + 1 + int(cfg["watermark"] * n) + rng.choice([0, 0, 2]))
    return n


LORAS, SALTS = ["sql", "chat", "code", "a/b"], ["t1", "t2", "\u00e9"]


def add_domains(seed: int, reqs: list[dict]) -> None:
    """LoRA adapters and cache salts (hash domains, ../sched_fresh_lora/), from a generator of
    their own: 1-4 adapters on about half the requests, salts on a third; a follow-up (a
    prompt that extends an earlier one) keeps its source's domain 7 times in 10."""
    rng = random.Random(seed * 31 + 5)
    nl = rng.randint(1, 4)
    for r in reqs:
        if rng.random() < 0.5:
            r["lora"] = rng.choice(LORAS[:nl])
        if rng.random() < 0.3:
            r["cache_salt"] = rng.choice(SALTS)
    for i, r in enumerate(reqs):
        for src in reqs[:i]:
            s = src["prompt_token_ids"]
            if len(s) > 4 and r["prompt_token_ids"][: len(s)] == s and rng.random() < 0.7:
                for key in ("lora", "cache_salt"):
                    if key in src:
                        r[key] = src[key]
                    else:
                        r.pop(key, None)
                break


def main() -> None:
    args = sys.argv[1:]
    eagle, mamba, lora = "--eagle" in args, "--mamba" in args, "--lora" in args
    global LONG, UNCLAMPED
    LONG = 4 if "--long" in args else 1
    UNCLAMPED = "--unclamped" in args
    pp = int(args[args.index("--pp") + 1]) if "--pp" in args else 1
    if "--pp" in args:
        del args[args.index("--pp") + 1]
    spec, hybrid = "--spec" in args or eagle, "--hybrid" in args and not mamba
    args = [a for a in args if a not in ("--spec", "--hybrid", "--eagle", "--mamba", "--lora",
                                         "--pp", "--long", "--unclamped")]
    out, seeds = args[0], [int(s) for s in args[1:]]
    os.makedirs(out, exist_ok=True)
    for s in seeds:
        asyn = s % 2 == 1
        cfg, reqs = make(s, asyn, spec, hybrid, eagle, mamba)
        if asyn:
            cfg["async_scheduling"] = True
        if lora:
            add_domains(s, reqs)
        if pp > 1:
            cfg["pipeline_parallel_size"] = pp
        name = ("w" + ("e" if eagle else "s" if spec else "") + ("m" if mamba else "")
                + ("l" if lora else "") + (f"p{pp}" if pp > 1 else "") + ("h" if hybrid else "")
                + ("L" if LONG > 1 else "") + ("u" if UNCLAMPED else "")
                + ("a" if asyn else ""))
        with open(f"{out}/{name}seed{s}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
