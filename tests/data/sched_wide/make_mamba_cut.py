# ruff: noqa
"""Dev tool (not a test): the two hand-made Mamba cases of sched_wide (README there).

    python3 tests/data/sched_wide/make_mamba_cut.py OUT_DIR

`mamba_cut_padding[_async]`: a Mamba group beside full attention (blocks of 16), n-gram K 3,
a long-prefill threshold of 2. `c` repeats `a`'s 33-token prompt once `a` is done: a hit of
32 (two blocks, the Mamba state at the boundary cached), one token left, padded to 1 + 3 and
cut to 2 by the threshold; the Mamba split then drops the padding (one token, unpadded), so
vLLM asserts nothing there. `d` (`b`'s first 33 tokens) arrives while `b` still decodes.
"""

import json
import random
import sys

rng = random.Random(5)
A = [rng.randrange(1, 30000) for _ in range(33)]
B = [rng.randrange(1, 30000) for _ in range(49)]
cfg = {"block_size": 16, "num_blocks": 64, "max_num_seqs": 8, "max_num_batched_tokens": 64,
       "max_model_len": 256, "long_prefill_token_threshold": 2, "policy": "fcfs",
       "watermark": 0.0, "scheduler_reserve_full_isl": True, "enable_chunked_prefill": True,
       "kv_events": True, "groups": [{"type": "mamba"}, {"type": "full"}],
       "num_speculative_tokens": 3, "spec_acceptance_rate": 0.6, "spec_seed": 1}
reqs = [{"id": "a", "prompt_token_ids": A, "output_length": 4, "arrival_step": 0},
        {"id": "b", "prompt_token_ids": B, "output_length": 30, "arrival_step": 0},
        {"id": "c", "prompt_token_ids": A, "output_length": 6, "arrival_step": 30},
        {"id": "d", "prompt_token_ids": B[:33], "output_length": 6, "arrival_step": 34}]
for name, asyn in (("mamba_cut_padding", False), ("mamba_cut_padding_async", True)):
    c = dict(cfg)
    if asyn:
        c["async_scheduling"] = True
    with open(f"{sys.argv[1]}/{name}.trace.jsonl", "w") as f:
        f.write(json.dumps({"config": c}) + "\n")
        f.writelines(json.dumps(r) + "\n" for r in reqs)
