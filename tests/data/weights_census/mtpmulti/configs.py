# ruff: noqa
"""The multi-module MTP targets ./ records: the tiny DeepSeek-V3 and GLM-4.5 of
../../mtp_draft/ (2-tiny-deepseek-v3, 6-tiny-glm4-moe) and GLM-4.5-Air's published config
(7-glm-4.5-air), each with num_nextn_predict_layers set to 2 or 3 (nothing else changed)."""
import json
from pathlib import Path

MTP = Path(__file__).resolve().parents[2] / "mtp_draft"
BASES = {"tiny-deepseek-v3": MTP / "2-tiny-deepseek-v3" / "target" / "config.json",
         "tiny-glm4-moe": MTP / "6-tiny-glm4-moe" / "target" / "config.json",
         "glm-4.5-air": MTP / "7-glm-4.5-air" / "target" / "config.json"}
CASES = {"tiny-deepseek-v3-2mtp": ("tiny-deepseek-v3", 2),
         "tiny-deepseek-v3-3mtp": ("tiny-deepseek-v3", 3),
         "tiny-glm4-moe-2mtp": ("tiny-glm4-moe", 2),
         "glm-4.5-air-2mtp": ("glm-4.5-air", 2)}


def config(case):
    base, n = CASES[case]
    return dict(json.loads(BASES[base].read_text()), num_nextn_predict_layers=n)
