"""vLLM's `--kv-cache-dtype` choices and the dtype each stores the KV cache in (None: the model's).

A module of its own so that the options that name them do not import the model and FLOP-count
modules (`kvcore.clock.vllm_count`) that a replay without a model never uses.
"""

from __future__ import annotations

KV_CACHE_DTYPES = {"auto": None, "bfloat16": "bfloat16", "float16": "float16",
                   "fp8": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn",
                   "fp8_e5m2": "float8_e4m3fn",
                   # (sparse MLA's: fp8 values with their scales, timed as fp8)
                   "fp8_ds_mla": "float8_e4m3fn"}
