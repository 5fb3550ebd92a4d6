# ruff: noqa
"""The targets whose MTP drafts ./ records (ERNIE-4.5's ErnieMTP, Step-3.5's Step3p5MTP): the
configs of ../mm_ernie/ and ../mm_step3/step3p5/ as written there, and `step3p5-hub-1mtp`, the
hub config with num_nextn_predict_layers 1 (its layer_types cut to 46 entries: the target's 45
and one MTP layer's); `tiny-step3p5-mtp-swa-heads`, ../mm_step3/step3p5/tiny-step3p5-swa-heads
with every target layer full and one sliding MTP layer of 12 heads."""
import json
from pathlib import Path

CENSUS = Path(__file__).resolve().parent.parent
CASES = {"ernie-4.5-21b-a3b-pt": CENSUS / "mm_ernie" / "ernie-4.5-21b-a3b-pt.config.json",
         "ernie-4.5-300b-a47b-pt": CENSUS / "mm_ernie" / "ernie-4.5-300b-a47b-pt.config.json",
         "step3p5-hub": CENSUS / "mm_step3" / "step3p5" / "step3p5-hub.config.json",
         "step3p5-hub-1mtp": CENSUS / "mm_step3" / "step3p5" / "step3p5-hub.config.json",
         "tiny-step3p5-mtp-swa-heads":
             CENSUS / "mm_step3" / "step3p5" / "tiny-step3p5-swa-heads.config.json"}


def config(case):
    cfg = json.loads(CASES[case].read_text())
    if case.endswith("-1mtp"):
        cfg = dict(cfg, num_nextn_predict_layers=1, layer_types=cfg["layer_types"][:46])
    if case == "tiny-step3p5-mtp-swa-heads":
        # (the target's layers all full, 16 heads; its one MTP layer sliding, 12 heads: TP 8
        # builds the target, not the draft)
        cfg = dict(cfg, num_nextn_predict_layers=1, layer_types=["full_attention"] * 4,
                   mtp_layer_types=["sliding_attention"], mtp_mlp_layer_types=["dense"])
    return cfg
