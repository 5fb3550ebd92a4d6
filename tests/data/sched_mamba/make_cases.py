"""Writes the Mamba scheduler traces of this folder (a dev tool, not a test).

    python tests/data/sched_mamba/make_cases.py tests/data/sched_mamba
    python tests/data/sched_mamba/make_cases.py tests/data/sched_mamba --mamba2

(``--mamba2``: the same requests, every Mamba group a Mamba2 one, ``{"type": "mamba",
"checkpoint": true}``, written as ``m2_X.trace.jsonl``; ``--prefix-match-unit N``: the config
line's ``prefix_match_unit`` N, vLLM's partial-block hits, written as ``pN_X.trace.jsonl``.)

Token ids from a seeded random.Random; the config line is the scheduler oracle's with the
Jamba layout of kvcli's `jamba-v0.1` (seven Mamba groups, then full attention, block 80)
unless a case says otherwise. Answers: ../oracle_mamba.py (see README.md).
"""

import json
import random
import sys
from pathlib import Path

JAMBA = [{"type": "mamba"}] * 7 + [{"type": "full"}]


def config(**kw):
    base = {"block_size": 80, "num_blocks": 400, "max_num_seqs": 8,
            "max_num_batched_tokens": 512, "max_model_len": 1024, "groups": JAMBA}
    base.update(kw)
    return {"config": base}


def tokens(rng, n):
    return [rng.randrange(3, 30000) for _ in range(n)]


def req(rid, prompt, out, step):
    return {"id": rid, "prompt_token_ids": prompt, "output_length": out, "arrival_step": step}


def cases():
    rng = random.Random(7)
    # a: a 200-token shared prefix (2.5 blocks), prompts not multiples of 80, arrivals spaced
    # so each earlier request has prefilled; a0 re-sent word for word at the end
    pre = tokens(rng, 200)
    a = [req("a0", pre + tokens(rng, 57), 6, 0), req("a1", pre + tokens(rng, 130), 5, 4),
         req("a2", pre + tokens(rng, 3), 4, 8), req("a3", pre[:170], 3, 12)]
    a.append(req("a4", a[0]["prompt_token_ids"], 4, 16))
    yield "a_shared_long", config(kv_events=True), a
    # b: a 50-token shared prefix (shorter than a block), and one prompt of exactly 2 blocks
    pre = tokens(rng, 50)
    b = [req("b0", pre + tokens(rng, 110), 5, 0), req("b1", pre + tokens(rng, 30), 5, 3),
         req("b2", tokens(rng, 160), 3, 6), req("b3", pre + tokens(rng, 200), 4, 9)]
    b.append(req("b4", b[2]["prompt_token_ids"] + tokens(rng, 45), 3, 14))
    yield "b_shared_short", config(), b
    # c: chunked prefill under a small budget, 100 tokens (one block and a bit), two at once
    pre = tokens(rng, 240)
    c = [req("c0", pre + tokens(rng, 175), 4, 0), req("c1", pre + tokens(rng, 33), 4, 0),
         req("c2", pre + tokens(rng, 90), 3, 8), req("c3", tokens(rng, 95), 3, 9)]
    yield "c_chunked_budget_100", config(max_num_batched_tokens=100), c
    # g: c's requests with dense retention (every block-aligned state cached, not only those
    # a later hit can start from): c1 hits c0's state at 240
    yield "g_dense_retention", config(max_num_batched_tokens=100,
                                      prefix_cache_retention_interval=None), c
    # d: a budget narrower than a block (64 < 80): chunks advance sub-block
    d = [req("d0", pre + tokens(rng, 70), 3, 0), req("d1", pre + tokens(rng, 21), 3, 2)]
    yield "d_budget_below_block", config(max_num_batched_tokens=64), d
    # e: preemption: 60 usable blocks shared by 8 groups (each Mamba group holds <= 2 a
    # request), long outputs
    pre = tokens(rng, 100)
    e = [req(f"e{i}", pre + tokens(rng, 60 + 37 * i), 150, i) for i in range(5)]
    yield "e_preemption", config(num_blocks=61, max_model_len=640, kv_events=True), e
    # f: block 16, two Mamba groups around a full one, long-prefill threshold 40
    pre = tokens(rng, 37)
    f = [req("f0", pre + tokens(rng, 29), 5, 0), req("f1", pre + tokens(rng, 60), 4, 1),
         req("f2", pre + tokens(rng, 5), 3, 5), req("f3", pre[:32], 3, 8)]
    yield "f_block16", config(block_size=16, num_blocks=120, max_num_batched_tokens=96,
                              long_prefill_token_threshold=40, max_model_len=256,
                              groups=[{"type": "mamba"}, {"type": "full"},
                                      {"type": "mamba"}]), f


def mamba2(cfg):
    groups = cfg["config"].get("groups", JAMBA)
    return {"config": {**cfg["config"], "groups": [
        {**g, "checkpoint": True} if g["type"] == "mamba" else g for g in groups]}}


def main(out_dir: str, ckpt: bool, unit: int | None) -> None:
    for name, cfg, reqs in cases():
        if ckpt:
            name, cfg = f"m2_{name}", mamba2(cfg)
        if unit is not None:
            # vLLM's --prefix-match-unit: hashes every `unit` tokens, partial-block hits
            name, cfg = f"p{unit}_{name}", {"config": {**cfg["config"],
                                                        "prefix_match_unit": unit}}
        lines = [json.dumps(cfg)] + [json.dumps(r) for r in reqs]
        (Path(out_dir) / f"{name}.trace.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    args = sys.argv[2:]
    main(sys.argv[1], "--mamba2" in args,
         int(args[args.index("--prefix-match-unit") + 1])
         if "--prefix-match-unit" in args else None)
