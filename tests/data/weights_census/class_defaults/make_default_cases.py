"""Write the census configs here (python make_default_cases.py, in this folder): DeepSeek-V2-
Lite's, DeepSeek-V3's and Kimi-K2's published configs (../../mla) cut to 4 layers, without
`n_routed_experts`: the routed experts their config classes then give (DeepseekV2Config 64,
DeepseekV3Config 256, which vLLM reads kimi_k2 with)."""
# ruff: noqa
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MLA = HERE.parents[1] / "mla"


def cases():
    out = {}
    for name in ("deepseek-v2-lite", "deepseek-v3", "kimi-k2"):
        cfg = json.loads((MLA / f"{name}.config.json").read_text())
        cfg.pop("quantization_config", None)
        cfg.pop("n_routed_experts")
        out[f"{name}-no-routed-experts"] = {**cfg, "num_hidden_layers": 4}
    return out


if __name__ == "__main__":
    for f in HERE.glob("*.config.json"):
        f.unlink()
    for name, cfg in cases().items():
        (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
