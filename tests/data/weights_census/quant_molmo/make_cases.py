"""Write the census configs here (python make_cases.py, in this folder): Molmo under
../quant_towers/make_cases.py's quantisation methods, on ../mm_nemo's
tiny-molmo-qknorm-gqa-norm-after widened so that groups and blocks of 128 divide its language
model's linears at TP 1 (512 wide, 8 heads of 64, 2 KV heads, the fused MLP 2,048; its tower is
vLLM's own fixed CLIP ViT-L/14 whatever the config says)."""
# ruff: noqa
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("qt_cases", HERE.parent / "quant_towers" /
                                               "make_cases.py")
qt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qt)

KEEP = ("fp8", "fp8-block", "ct-fp8", "ct-w4a16", "awq", "gptq")


def base():
    cfg = qt.read("mm_nemo/tiny-molmo-qknorm-gqa-norm-after.config.json")
    return {**cfg, "_name_or_path": "tiny-molmo", "hidden_size": 512,
            "intermediate_size": 2048, "num_hidden_layers": 2}


def main():
    names = ["vision_backbone"]
    ignore = ["re:.*lm_head", *(f"re:.*{n}.*" for n in names)]
    for method, q in qt.methods(names, ignore).items():
        if method in KEEP:
            (HERE / f"tiny-molmo-{method}.config.json").write_text(
                json.dumps({**base(), "quantization_config": q}, indent=1) + "\n")


if __name__ == "__main__":
    main()
