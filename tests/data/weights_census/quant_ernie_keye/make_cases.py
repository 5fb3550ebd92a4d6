"""Write the census configs here (python make_cases.py, in this folder): ERNIE-4.5-VL's and
Keye-VL 1.5's towers under ../quant_towers/make_cases.py's quantisation methods, with and
without lists naming the tower and its projector, on ../mm_ernie's tiny configs (ERNIE-4.5-VL:
a 512-wide 3-block ViT, 2,048 in its MLP; Keye-VL 1.5: a 256-wide 2-layer SigLIP, 512), and
ERNIE-4.5-VL's language model with a shared expert and a dense text MLP in MoE blocks
(``tiny-ernie-vl-shared-*``)."""
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
# (ERNIE-4.5-VL's language model: one shared expert, the text experts routed in layers 2-4
# alone, so that layers 1 and 5 hold a dense text MLP beside the shared expert and the vision
# experts routed in 1-5)
SHARED = {"moe_num_shared_experts": 1, "moe_layer_start_index": [2, 1],
          "moe_layer_end_index": [4, 5]}
SHARED_KEEP = ("fp8", "fp8-block", "ct-fp8", "ct-w4a16", "awq", "gptq")
BASES["tiny-ernie-vl-shared"] = ({**BASES["tiny-ernie-vl"][0], **SHARED},
                                 BASES["tiny-ernie-vl"][1])


def main():
    for base, (cfg, names) in BASES.items():
        ignore = ["re:.*lm_head", *(f"re:.*{n}.*" for n in names)]
        for method, q in qt.methods(names, ignore).items():
            if method in (SHARED_KEEP if base.endswith("-shared") else KEEP):
                out = {**cfg, "quantization_config": q}
                (HERE / f"{base}-{method}.config.json").write_text(
                    json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
