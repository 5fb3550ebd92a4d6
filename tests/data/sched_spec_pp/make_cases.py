# ruff: noqa
"""Dev tool (not a test): seeded random traces for oracle_spec_pp.py, speculative decoding with
pipeline parallelism (README.md here).

    python3 tests/data/sched_spec_pp/make_cases.py OUT_DIR SEED...

Case `spNNN` (ngram, eagle3, eagle) or `spmNNN` (mtp: give them to the oracle in a call of
their own) is seeded by NNN. The requests and the config are ../sched_fresh/make_cases.py's
(imported: shared prefixes, staggered arrivals, priorities, tight pools that preempt, chunked
prefill on or off, thresholds; follow-up requests under async), then: async scheduling half the
time, PP 2-4, method ngram / eagle3 / mtp (a tenth eagle), K 1-3, acceptance 0.3-0.9, EAGLE's
and MTP's legacy hashes (`disable_lookahead_block_hashes`) a third of the time, a third of the
cases ../sched_spec/make_spec_cases.py's edge requests (a full prefix hit, a one-token prompt,
a prompt that reaches max_model_len), and a quarter of the non-mtp cases hybrid groups
(sched_fresh's `add_groups`, its pool sized for one batch in flight, or two under async: a
deeper queue may be refused by vLLM, which is recorded as such), eagle ones flagging
`eagle_groups` half the time.
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fresh = _load("fresh_cases", DATA / "sched_fresh" / "make_cases.py")
spec_cases = _load("spec_cases", DATA / "sched_spec" / "make_spec_cases.py")


def make(seed: int) -> tuple[str, dict, list[dict]]:
    rng = random.Random(seed * 6007 + 13)
    asyn = rng.random() < 0.5
    cfg, reqs = fresh.make(seed, follow_ups=asyn)
    method = rng.choice(["ngram", "ngram", "ngram", "eagle3", "eagle3", "eagle3", "eagle",
                         "mtp", "mtp", "mtp"])
    hybrid = method != "mtp" and rng.random() < 0.25
    if hybrid:
        fresh.add_groups(cfg, reqs, seed, asyn)
    if rng.random() < 0.33:
        spec_cases.add_edges(cfg, reqs, rng)
    cfg.update(num_speculative_tokens=rng.randint(1, 3),
               spec_acceptance_rate=rng.choice([0.3, 0.5, 0.7, 0.9]),
               spec_seed=rng.randrange(1000), spec_method=method,
               pipeline_parallel_size=rng.choice([2, 2, 3, 4]))
    if method != "ngram" and rng.random() < 0.33:
        cfg["disable_lookahead_block_hashes"] = True
    if hybrid and method != "ngram" and rng.random() < 0.5:
        cfg["eagle_groups"] = sorted(rng.sample(range(len(cfg["groups"])),
                                                rng.randint(1, len(cfg["groups"]))))
    if asyn:
        cfg["async_scheduling"] = True
    return ("spm" if method == "mtp" else "sp") + str(seed), cfg, reqs


def main() -> None:
    out, seeds = Path(sys.argv[1]), sys.argv[2:]
    for s in seeds:
        name, cfg, reqs = make(int(s))
        with open(out / f"{name}.trace.jsonl", "w") as f:
            f.write(json.dumps({"config": cfg}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in reqs)


if __name__ == "__main__":
    main()
