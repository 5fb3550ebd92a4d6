"""Write the census configs here (python make_cases.py, in this folder): ERNIE-4.5-VL's and
Keye-VL 1.5's towers under ../quant_towers/make_cases.py's quantisation methods, with and
without lists naming the tower and its projector, on ../mm_ernie's tiny configs (ERNIE-4.5-VL:
a 512-wide 3-block ViT, 2,048 in its MLP; Keye-VL 1.5: a 256-wide 2-layer SigLIP, 512)."""
# ruff: noqa
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("qt_cases", HERE.parent / "quant_towers" /
                                               "make_cases.py")
qt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qt)

BASES = {
    "tiny-ernie-vl": (qt.read("mm_ernie/tiny-ernie-vl-split-experts.config.json"),
                      ["vision_model", "resampler_model"]),
    "tiny-keye-vl-1_5": (qt.read("mm_ernie/tiny-keye-vl-1_5.config.json"), ["visual", "mlp_AR"]),
}
# (ModelOpt left out: its own tower rules are not this change's)
KEEP = ("fp8", "fp8-block", "ct-fp8", "ct-fp8-ignore-tower", "ct-w4a16", "awq",
        "awq-skip-tower", "gptq")


def main():
    for base, (cfg, names) in BASES.items():
        ignore = ["re:.*lm_head", *(f"re:.*{n}.*" for n in names)]
        for method, q in qt.methods(names, ignore).items():
            if method in KEEP:
                out = {**cfg, "quantization_config": q}
                (HERE / f"{base}-{method}.config.json").write_text(
                    json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
