# ruff: noqa
"""The multi-module MTP targets ./ records (num_nextn_predict_layers n > 1), each a config
kvcli already sizes with one module, with n set and nothing else changed but where named:
Qwen3-Next's tiny of ../../mtp_draft/4-tiny-qwen3-next (n 2; n 3 with decoder_sparse_step 2,
so its modules 0 and 2 are dense, 1 MoE) and its 80B (3-qwen3-next-80b-a3b, n 2), DeepSeek-V3.2
and GLM-5 (../../sparse_mla/), GLM-4.7-Flash (../../mla/glm-4.7-flash) and the tiny openPangu
of ../openpangu/, each n 2."""
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2]
MTP = DATA / "mtp_draft"
BASES = {"tiny-qwen3-next": MTP / "4-tiny-qwen3-next" / "target" / "config.json",
         "qwen3-next-80b-a3b": MTP / "3-qwen3-next-80b-a3b" / "target" / "config.json",
         "deepseek-v3.2": DATA / "sparse_mla" / "deepseek-v3.2.config.json",
         "glm-5": DATA / "sparse_mla" / "glm-5.config.json",
         "glm-4.7-flash": DATA / "mla" / "glm-4.7-flash.config.json",
         "tiny-pangu-ultra-moe": DATA / "weights_census" / "openpangu"
                                 / "tiny-pangu-ultra-moe.config.json"}
# case -> (base, n, other keys changed)
CASES = {"tiny-qwen3-next-2mtp": ("tiny-qwen3-next", 2, {}),
         "tiny-qwen3-next-3mtp-sparse2": ("tiny-qwen3-next", 3, {"decoder_sparse_step": 2}),
         "qwen3-next-80b-a3b-2mtp": ("qwen3-next-80b-a3b", 2, {}),
         "deepseek-v3.2-2mtp": ("deepseek-v3.2", 2, {}),
         "glm-5-2mtp": ("glm-5", 2, {}),
         "glm-4.7-flash-2mtp": ("glm-4.7-flash", 2, {}),
         "tiny-pangu-ultra-moe-2mtp": ("tiny-pangu-ultra-moe", 2, {})}
SPARSE = ("deepseek-v3.2-2mtp", "glm-5-2mtp")
QWEN3_NEXT = ("tiny-qwen3-next-2mtp", "tiny-qwen3-next-3mtp-sparse2", "qwen3-next-80b-a3b-2mtp")


def config(case):
    base, n, changed = CASES[case]
    return dict(json.loads(BASES[base].read_text()), num_nextn_predict_layers=n, **changed)
