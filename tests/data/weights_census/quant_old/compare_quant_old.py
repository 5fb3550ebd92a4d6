"""Compare kvcli's weights per rank with answers.json here (a development tool, run from the
project root with the project's venv: python tests/data/weights_census/quant_old/
compare_quant_old.py [-v] [-g]), as ../families/compare_families.py does, with one correction:
the compressed-tensors cases' attention k/v/q scales, recorded on the meta device in the model
dtype, are float32 on a real device (real_device.json; README), 6 B a layer more."""
# ruff: noqa
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "families"))
import compare_families as cf  # noqa: E402

LAYERS = 2


if __name__ == "__main__":
    cases = json.loads((HERE / "answers.json").read_text())["cases"]
    # (the correction applied in place, then the families' comparison)
    fixed = {}
    for key, case in cases.items():
        for ranks in case.get("tp", {}).values():
            for rec in ranks:
                if "param_bytes_by_dtype" in rec and "-ct-" in key:
                    rec["param_bytes_by_dtype"] = {**rec["param_bytes_by_dtype"],
                                                   "meta_correction": 3 * 2 * LAYERS}
        fixed[key] = case
    tmp = Path("/tmp/quant_old_corrected")
    tmp.mkdir(exist_ok=True)
    (tmp / "answers.json").write_text(json.dumps({"cases": fixed}))
    for f in HERE.glob("*.config.json"):
        (tmp / f.name).write_text(f.read_text())
    cf.main(tmp)
