# ruff: noqa
"""The targets whose MTP drafts ./ records (ERNIE-4.5's ErnieMTP, Step-3.5's Step3p5MTP): the
configs of ../mm_ernie/ and ../mm_step3/step3p5/ as written there, and `step3p5-hub-1mtp`, the
hub config with num_nextn_predict_layers 1 (its layer_types cut to 46 entries: the target's 45
and one MTP layer's)."""
import json
from pathlib import Path

CENSUS = Path(__file__).resolve().parent.parent
CASES = {"ernie-4.5-21b-a3b-pt": CENSUS / "mm_ernie" / "ernie-4.5-21b-a3b-pt.config.json",
         "ernie-4.5-300b-a47b-pt": CENSUS / "mm_ernie" / "ernie-4.5-300b-a47b-pt.config.json",
         "step3p5-hub": CENSUS / "mm_step3" / "step3p5" / "step3p5-hub.config.json",
         "step3p5-hub-1mtp": CENSUS / "mm_step3" / "step3p5" / "step3p5-hub.config.json"}


def config(case):
    cfg = json.loads(CASES[case].read_text())
    if case.endswith("-1mtp"):
        cfg = dict(cfg, num_nextn_predict_layers=1, layer_types=cfg["layer_types"][:46])
    return cfg
