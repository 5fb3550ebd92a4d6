# ruff: noqa
"""Dev tool (not a test): vLLM 0.33.0's own `Scheduler._mamba_block_aligned_split` on a stub
scheduler and request, for the rows of `test_mutant_cases.SPLIT_VALUES` (README.md here).

    R=~/.cache/vllm-oracle
    VLLM_ORACLE_SRC=$R/src VLLM_LOGGING_LEVEL=ERROR $R/venv/bin/python record_split_values.py \\
        '[4, 0, 1, false, false, 4, 0, 4, 5, 2, 10, 9]' ...

Each argument: block, unit (0: no partial hits), checkpoint alignment (0: no Mamba2 checkpoint
blocks), EAGLE's drop, the junction option (vLLM's `mamba_shared_prefix_checkpoint`), budget,
long-prefill threshold, start (computed tokens), new tokens, prompt tokens, tokens, junction;
prints it with vLLM's answer. The stub carries only what the method reads (no hash lookahead).
"""

import json
import os
import sys
from types import SimpleNamespace as ns

sys.path.insert(0, os.environ["VLLM_ORACLE_SRC"])
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402

for arg in sys.argv[1:]:
    bs, unit, align, drop, junction, budget, lpt, start, n, prompt, tokens, at = json.loads(arg)
    sched = ns(cache_config=ns(block_size=bs), block_size=bs, hash_block_size=unit or bs,
               mamba_partial_cache_hit=bool(unit), use_eagle_block_drop=drop,
               num_hash_lookahead_tokens=0, mamba_has_prefill_checkpoint_blocks=align > 0,
               mamba_prefill_checkpoint_alignment=align or 1, max_num_scheduled_tokens=budget,
               scheduler_config=ns(long_prefill_token_threshold=lpt),
               mamba_shared_prefix_checkpoint=junction)
    req = ns(num_computed_tokens=start, num_prompt_tokens=prompt, num_tokens=tokens,
             shared_prefix_boundary=at)
    print(arg, Scheduler._mamba_block_aligned_split(sched, req, n))
