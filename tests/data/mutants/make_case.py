"""Write a small token-id trace for `oracle sched`: the config line, then one request a line with
random prompt tokens (a seeded generator, so the command in README.md makes the same file).

    python make_case.py OUT CONFIG_JSON REQUESTS_JSON SEED

REQUESTS_JSON: ``[[id, prompt_len, output_len, arrival_step(, priority)], ...]``; the requests'
prompts are drawn in that order. ``[id, "same:OTHER", output_len, arrival_step]`` repeats an
earlier request's prompt (a shared prefix); ``"same:OTHER+N"`` adds N fresh tokens to it.
"""

from __future__ import annotations

import json
import random
import sys


def main() -> None:
    out, cfg, reqs, seed = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), \
        int(sys.argv[4])
    rng = random.Random(seed)
    prompts: dict[str, list[int]] = {}
    with open(out, "w") as f:
        f.write(json.dumps({"config": cfg}) + "\n")
        for rid, p, o, a, *rest in reqs:
            if isinstance(p, str):
                other, _, extra = p.removeprefix("same:").partition("+")
                tokens = prompts[other] + [rng.randrange(1, 30000) for _ in range(int(extra or 0))]
            else:
                tokens = [rng.randrange(1, 30000) for _ in range(p)]
            prompts[rid] = tokens
            line = {"id": rid, "prompt_token_ids": tokens, "output_length": o, "arrival_step": a}
            if rest:
                line["priority"] = rest[0]
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
