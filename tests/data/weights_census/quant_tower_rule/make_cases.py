# ruff: noqa
"""Write this folder's configs (from the project root: /work/main/.venv/bin/python
tests/data/weights_census/quant_tower_rule/make_cases.py): the tiny configs of the classes
whose tower and projector vLLM builds with the quant_config at ``vision_tower`` and
``multi_modal_projector`` and that `kvcore.models.tower_int_quant.PREFIXES` does not list,
under ../quant_towers/tiny-llava-clip-awq's AWQ settings: ``-awq-skip-tower`` with
``modules_to_not_convert`` naming both (what `int_quant_rank.modelled`'s rule sizes), ``-awq``
with nothing skipped (kvcli counts it unquantised, with its warning). A development tool."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CENSUS = HERE.parent
AWQ = json.loads((CENSUS / "quant_towers" / "tiny-llava-clip-awq.config.json").read_text())[
    "quantization_config"]
BASES = {"tiny-llava-next-video": "mm_audio/tiny-llava-next-video-max-pool",
         "tiny-cohere2-vision": "mm_cohere/tiny-cohere2-vision",
         "tiny-aria": "mm_cohere/tiny-aria",
         "lightonocr-1b": "mm_cohere/lightonocr-1b",
         "tiny-phi4-siglip": "mm_towers12/tiny-phi4-siglip"}

if __name__ == "__main__":
    for name, src in BASES.items():
        cfg = json.loads((CENSUS / f"{src}.config.json").read_text())
        for suffix, skips in (("-awq", None), ("-awq-skip-tower",
                                                ["vision_tower", "multi_modal_projector"])):
            q = dict(AWQ, **({"modules_to_not_convert": skips} if skips else {}))
            out = HERE / f"{name}{suffix}.config.json"
            out.write_text(json.dumps(dict(cfg, quantization_config=q), indent=1) + "\n")
