"""Dev tool (not a test): stamp n-gram speculative decoding onto scheduler traces for
oracle_spec.py.

    python3 tests/data/sched_spec/make_spec_cases.py [--edges] OUT_DIR TRACE...

Each TRACE (`sched.py`'s config line and requests, e.g. from tests/data/sched_fresh/make_cases.py)
is written to OUT_DIR under its own name, its config line given `num_speculative_tokens` (1-5),
`spec_acceptance_rate` (0, 0.3, 0.6, 0.9 or 1) and `spec_seed`, drawn from a generator seeded by
the file's name (crc32), so a rerun writes the same case.

With --edges it also adds three requests that reach the edges of vLLM's spec scheduling:
`<first id>p`, a copy of an earlier prompt cut to whole blocks plus one token, arriving once that
prompt has run (a full prefix hit leaves one token to compute: the waiting loop pads it to
1 + K, `pad_spec_decode`); `<first id>o`, a 1-token prompt (padded too when running requests
were scheduled before it); `<first id>m`, a prompt 40 tokens short of max_model_len asking for
more output than fits (stops at max_model_len, drafts cut by the scheduler's max_model_len cap).
The pool grows, if it must, to hold `m` alone.
"""

import json
import random
import sys
import zlib
from pathlib import Path


def stamp(cfg: dict, rng: random.Random) -> None:
    cfg["num_speculative_tokens"] = rng.randint(1, 5)
    cfg["spec_acceptance_rate"] = rng.choice([0.0, 0.3, 0.6, 0.9, 1.0])
    cfg["spec_seed"] = rng.randrange(1000)


def add_edges(cfg: dict, reqs: list[dict], rng: random.Random) -> None:
    bs, mml = cfg.get("block_size", 16), cfg.get("max_model_len", 8192)
    base = str(reqs[0]["id"])
    src = rng.choice([r for r in reqs if len(r["prompt_token_ids"]) > bs] or reqs)
    whole = (len(src["prompt_token_ids"]) - 1) // bs * bs
    last = max(r["arrival_step"] for r in reqs)
    reqs.append({"id": base + "p", "prompt_token_ids": src["prompt_token_ids"][:whole + 1],
                 "output_length": rng.randrange(2, 30),
                 "arrival_step": src["arrival_step"] + rng.randrange(2, 12)})
    reqs.append({"id": base + "o", "prompt_token_ids": [rng.randrange(1, 30000)],
                 "output_length": rng.randrange(2, 30),
                 "arrival_step": rng.randrange(0, last + 5)})
    plen = mml - 40
    reqs.append({"id": base + "m", "prompt_token_ids": [rng.randrange(1, 30000)
                                                        for _ in range(plen)],
                 "output_length": 60, "arrival_step": rng.randrange(0, last + 5)})
    reqs.sort(key=lambda r: r.get("arrival_step", 0))
    # The pool must hold `m` alone (max_model_len tokens), or vLLM stalls on it.
    need = -(-mml // bs) + int(cfg.get("watermark", 0.0) * cfg.get("num_blocks", 0)) + 2
    if "groups" not in cfg:
        cfg["num_blocks"] = max(cfg.get("num_blocks", 0), need)


def main() -> None:
    args = sys.argv[1:]
    edges = "--edges" in args
    args = [a for a in args if a != "--edges"]
    out, traces = Path(args[0]), args[1:]
    for t in traces:
        lines = Path(t).read_text().splitlines()
        cfg = json.loads(lines[0])["config"]
        reqs = [json.loads(x) for x in lines[1:] if x.strip()]
        rng = random.Random(zlib.crc32(Path(t).name.encode()))
        stamp(cfg, rng)
        if edges:
            add_edges(cfg, reqs, rng)
        with open(out / Path(t).name, "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
