# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33's CudaPlatform picks on an H100 (capability 9.0) for
--kv-cache-dtype fp8_ds_mla on models that are not sparse MLA, recorded into
ds_mla_dense.json for tests/test_sparse_mla_ds_dtype.py.

    R=~/.cache/vllm-oracle
    HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR PYTHONPATH=$R/src \\
        $R/venv/bin/python tests/data/sparse_mla/record_ds_mla_dense.py \\
        > tests/data/sparse_mla/ds_mla_dense.json

Each case calls `CudaPlatform.get_valid_backends` (the list and checks `get_attn_backend_cls`
walks before it raises "No valid attention backend found") with the AttentionSelectorConfig a
layer of that kind builds: a plain decoder layer (head 128), dense MLA (head 576, DeepSeek-V3),
and sparse MLA (head 576, use_sparse, for comparison). Backends whose import needs a GPU
library answer ImportError on this CPU (`vllm._C_stable_libtorch`,
which cuda.py imports first, is an empty module here); their dtype reasons are not reached.
Each reason is kept to its first 80 characters (the JSON's lines within the house's 100).
"""
import json, sys, types
import torch
# (cuda.py imports its compiled ops first; this CPU has no libcuda: an empty module instead,
# the backend choice reads none of it)
sys.modules["vllm._C_stable_libtorch"] = types.ModuleType("vllm._C_stable_libtorch")
from vllm.platforms.cuda import CudaPlatform
from vllm.platforms.interface import DeviceCapability
from vllm.v1.attention.selector import AttentionSelectorConfig

CASES = [("decoder", 128, False, False), ("dense_mla", 576, True, False),
         ("sparse_mla", 576, True, True)]
out = []
for name, head, mla, sparse in CASES:
    for dt in ("fp8", "fp8_ds_mla"):
        cfg = AttentionSelectorConfig(head_size=head, dtype=torch.bfloat16, kv_cache_dtype=dt,
                                      block_size=None, use_mla=mla, use_sparse=sparse)
        valid, invalid = CudaPlatform.get_valid_backends(DeviceCapability(9, 0), cfg,
                                                         num_heads=128)
        out.append({"layer": name, "kv_cache_dtype": dt,
                    "valid": [c.backend.name for c in sorted(valid, key=lambda c: c.priority)],
                    "invalid": {b.name: [x[:80] for x in r]
                                for b, (_, r) in invalid.items()}})
print(json.dumps(out, indent=1))
