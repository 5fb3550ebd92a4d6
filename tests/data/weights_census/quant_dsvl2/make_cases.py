"""Write the census configs here (python make_cases.py, in this folder): DeepSeek-VL2 under each
quantisation method of ../quant_towers/make_cases.py, with and without lists naming its tower
(as a checkpoint would: ``vision``, which vLLM's prefixes for the swapped timm linears do not
hold, and the prefixes they do: ``blocks.N.mlp.fc1``, ``attn_pool.mlp.fc2``), on a synthetic
base (../mm_omni/deepseek_vl2's deepseek-vl2-tiny, its text model cut to 2 layers, 1,024 wide,
16 heads, 4 experts of 1,024: whole 128-groups and blocks at TP 1 to 8) and the published
deepseek-vl2-tiny under fp8 (its 10 heads: TP 1 and 2 only)."""
# ruff: noqa
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("qt_cases", HERE.parent / "quant_towers" /
                                               "make_cases.py")
qt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qt)

TINY = qt.read("mm_omni/deepseek_vl2/deepseek-vl2-tiny.config.json")
BASE = json.loads(json.dumps(TINY))
BASE["language_config"].update(num_hidden_layers=2, hidden_size=1024, intermediate_size=2048,
                               num_attention_heads=16, num_key_value_heads=16,
                               moe_intermediate_size=1024, n_routed_experts=4,
                               num_experts_per_tok=2, n_shared_experts=1)
BASE["projector_config"]["n_embed"] = 1024
# (the tower by the names a checkpoint gives it, and by vLLM's prefixes of the swapped linears)
VISION = ["vision", "projector"]
FCS = ["mlp.fc1", "mlp.fc2"]
CASES = {f"tiny-dsvl2-{m}": (BASE, q) for m, q in qt.methods(
    VISION, ["re:.*lm_head", "re:.*vision.*", "re:.*projector.*"]).items()}
CASES.update({
    "tiny-dsvl2-awq-skip-fc": (BASE, {**qt.AWQ, "modules_to_not_convert": FCS}),
    "tiny-dsvl2-ct-w4a16-ignore-fc": (BASE, qt.ct("pack-quantized", qt.W4A16, None,
                                                  ["re:.*lm_head", "re:.*mlp[.]fc[12]$"])),
    "deepseek-vl2-tiny-fp8": (TINY, qt.FP8),
})


def main():
    for name, (cfg, q) in CASES.items():
        out = {**cfg, "quantization_config": q}
        (HERE / f"{name}.config.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
