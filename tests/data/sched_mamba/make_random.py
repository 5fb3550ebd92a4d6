"""Writes random Mamba scheduler traces (a dev tool, not a test): ``mseedN.trace.jsonl``.

    python tests/data/sched_mamba/make_random.py OUT_DIR FIRST LAST   # seeds FIRST..LAST-1
    python tests/data/sched_mamba/make_random.py OUT_DIR FIRST LAST --mamba2   # m2seedN
    python tests/data/sched_mamba/make_random.py OUT_DIR FIRST LAST [--mamba2] --prefix-match-unit 16

(``--mamba2``: every Mamba group a Mamba2 one, ``"checkpoint": true``, one prefill checkpoint
block more a request in vLLM's start-up check, and, drawn last, a retention interval: vLLM's
default 0 half the time, else dense (null) or 2 or 4 blocks; the other draws are the same.
``--knobs``: also vLLM's ``max_num_active_seqs``, the adaptive long-prefill threshold and a hash
algorithm, from a generator of their own (named kmseedN, km2seedN).
``--prefix-match-unit N``: the config line's ``prefix_match_unit`` N, vLLM's partial-block hits,
written as ``pN_mseedS`` / ``pN_m2seedS``; a block of 16 is drawn as 48, so the unit is finer.
``--align`` (implies ``--mamba2``; named ``am2seedN``): Gated DeltaNet-like checkpoint
alignments, each Mamba group's ``checkpoint_alignment`` 1, 16, 32, 64, 128, the block or twice
it (15% of cases a draw per group), a block of 64, 128, 192 or 320, ``max_model_len``
max(1024, 4 blocks), a unit of 16 or 32 two times in five (unless given), a budget of 64-1024
and a threshold of 0-300, all from a generator of their own.)

Each seed draws a block size (16 or 80), 1, 2, 3 or 7 Mamba groups with the full-attention group
at a random place, a pool from just what one max_model_len request needs to 400 blocks more,
2-8 sequences, a budget of 48-512 tokens, a long-prefill threshold, FCFS or priority, whole-
prompt admission on or off, KV events 3 times in 10, and 3-9 requests built from three shared
prefixes (resends and truncations of earlier prompts too). Answers: ../oracle_mamba.py (README).
"""

import json
import random
import sys


def trace(seed: int, ckpt: bool = False, unit: int | None = None,
          knobs: bool = False, align: bool = False) -> list[str]:
    rng = random.Random(seed)
    bs = rng.choice([16, 80])
    # --align: the block, the alignment, the unit, the budget and the threshold from a generator
    # of its own (the main one's draws, and so every other seed's trace, stay as they were)
    arng = random.Random(seed * 7919 + 11)
    if align:
        bs = arng.choice([64, 128, 192, 320])
        if unit is None:
            unit = arng.choice([None, None, 16, 16, 32])
    if unit is not None and bs <= unit:
        bs = 48
    nm = rng.choice([1, 2, 3, 7])
    groups = [{"type": "mamba", "checkpoint": True} if ckpt else {"type": "mamba"}] * nm
    if align:
        choices = [1, 16, 32, 64, 128, bs, 2 * bs]
        a = arng.choice(choices)
        mixed = arng.random() < 0.15      # (vLLM's Scheduler reads the first Mamba group's)
        groups = [{"type": "mamba", "checkpoint": True,
                   "checkpoint_alignment": arng.choice(choices) if mixed else a}
                  for _ in range(nm)]
    groups.insert(rng.randrange(nm + 1), {"type": "full"})
    mml = (512 if bs == 16 else 800) if not align else max(1024, 4 * bs)
    # vLLM's start-up check: one max_model_len request
    need = nm * (3 if ckpt else 2) + -(-mml // bs)
    cfg = {"block_size": bs, "num_blocks": need + 1 + rng.choice([0, 5, 20, 100, 400]),
           "max_num_seqs": rng.choice([2, 4, 8]),
           "max_num_batched_tokens": rng.choice([48, 64, 100, 128, 256, 512]),
           "max_model_len": mml, "groups": groups,
           "long_prefill_token_threshold": rng.choice([0, 0, 40, 96]),
           "policy": rng.choice(["fcfs", "fcfs", "priority"]),
           "scheduler_reserve_full_isl": rng.choice([True, False]),
           "kv_events": rng.random() < 0.3}
    if align:
        cfg["max_num_batched_tokens"] = arng.choice([64, 100, 160, 200, 256, 400, 512, 1024])
        cfg["long_prefill_token_threshold"] = arng.choice([0, 0, 40, 96, 150, 300])
    if cfg["max_num_batched_tokens"] < cfg["max_num_seqs"]:
        cfg["max_num_seqs"] = 2
    prefixes = [[rng.randrange(3, 30000) for _ in range(rng.randrange(1, 3 * bs + 20))]
                for _ in range(3)]
    lines = [json.dumps({"config": cfg})]
    step = 0
    prev: list[list[int]] = []
    for i in range(rng.randrange(3, 10)):
        r = rng.random()
        if r < 0.2 and prev:
            p = list(rng.choice(prev))
        elif r < 0.35 and prev:
            p = rng.choice(prev)[:rng.randrange(1, len(rng.choice(prev)) + 1)]
            p = p or [5]
        else:
            p = list(rng.choice(prefixes))[:rng.randrange(1, 3 * bs + 20)] + \
                [rng.randrange(3, 30000) for _ in range(rng.randrange(0, 2 * bs))]
        p = p[:mml - 100]
        prev.append(p)
        step += rng.choice([0, 0, 1, 2, 5, 10])
        lines.append(json.dumps({"id": f"r{i}", "prompt_token_ids": p,
                                 "output_length": rng.randrange(1, 60), "arrival_step": step,
                                 "priority": rng.randrange(3)}))
    if ckpt:
        cfg["prefix_cache_retention_interval"] = rng.choice([0, 0, None, 2 * bs, 4 * bs])
    if unit is not None:
        cfg["prefix_match_unit"] = unit
    if knobs:
        knob_rng = random.Random(seed * 104729 + 5)
        if knob_rng.random() < 0.6:
            cfg["max_num_active_seqs"] = knob_rng.randrange(1, cfg["max_num_seqs"] + 1)
        cfg["long_prefill_token_threshold_adaptive"] = knob_rng.choice([True, False])
        cfg["hash_algo"] = knob_rng.choice(["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"])
    lines[0] = json.dumps({"config": cfg})
    return lines


if __name__ == "__main__":
    out, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rest = sys.argv[4:]
    ckpt = "--mamba2" in rest
    unit = (int(rest[rest.index("--prefix-match-unit") + 1]) if "--prefix-match-unit" in rest
            else None)
    knobs = "--knobs" in rest
    align = "--align" in rest
    ckpt = ckpt or align
    prefix = ("a" if align else "") + (f"p{unit}_" if unit is not None else "") + \
        ("k" if knobs else "")
    for seed in range(first, last):
        name = f"{prefix}{'m2seed' if ckpt else 'mseed'}{seed}"
        with open(f"{out}/{name}.trace.jsonl", "w") as f:
            f.write("\n".join(trace(seed, ckpt, unit, knobs, align)) + "\n")
