"""Write the KV cache scheme census configs here (python make_kv_cases.py, in this folder): the
models of ../int_quant under compressed-tensors with a ``kv_cache_scheme`` (the one llm-compressor
writes for an fp8 KV cache, and schemes vLLM refuses), and fp8 / ModelOpt checkpoints for the
fp8_e5m2 refusal."""
# ruff: noqa
import json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
from kvcore.models.presets import PRESETS

INT = HERE.parent / "int_quant"


def of(case):
    return json.loads((INT / f"{case}.config.json").read_text())


# (llm-compressor's fp8 KV cache scheme: static, per tensor, symmetric)
KV = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False, "symmetric": True}


def ct(case, **kv):
    """../int_quant's `case` with a kv_cache_scheme (KV, `kv` changed; None: removed)."""
    cfg = of(case)
    cfg["quantization_config"]["kv_cache_scheme"] = {**KV, **kv}
    return cfg


def quant(case, q):
    cfg = of(case)
    cfg["quantization_config"] = q
    return cfg


W8A8 = of("llama-ct-w8a8-int8")["quantization_config"]
LLAMA_8B = {**PRESETS["llama-3.1-8b"][1], "torch_dtype": "bfloat16",
            "quantization_config": {**W8A8, "kv_cache_scheme": KV}}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic"}
MODELOPT = json.loads((HERE.parent / "modelopt" / "llama-modelopt-fp8.config.json").read_text())

CASES = {
    "llama-ct-w8a8-kv-fp8": ct("llama-ct-w8a8-int8"),
    "llama-ct-w4a16-kv-fp8": ct("llama-ct-w4a16"),
    "llama-ct-w8a8-kv-attn-head": ct("llama-ct-w8a8-int8", strategy="attn_head"),
    "llama-ct-w8a8-kv-int8": ct("llama-ct-w8a8-int8", type="int"),
    "llama-ct-w8a8-kv-fp4": ct("llama-ct-w8a8-int8", num_bits=4),
    "llama-ct-w8a8-kv-channel": ct("llama-ct-w8a8-int8", strategy="channel"),
    "llama-ct-w8a8-kv-asym": ct("llama-ct-w8a8-int8", symmetric=False),
    "llama-ct-w8a8-kv-no-symmetric": {**(c := ct("llama-ct-w8a8-int8")), "quantization_config": {
        **c["quantization_config"], "kv_cache_scheme": {
            k: v for k, v in KV.items() if k != "symmetric"}}},
    "llama-ct-w4a16-no-kv": of("llama-ct-w4a16"),
    "deepseek-v3-ct-fp8-kv-fp8": ct("deepseek-v3-ct-fp8-dynamic"),
    "deepseek-v3-ct-fp8-kv-int8": ct("deepseek-v3-ct-fp8-dynamic", type="int"),
    "jamba-ct-fp8-kv-fp8": ct("jamba-ct-fp8-dynamic"),
    "llama-3-1-8b-ct-w8a8-kv-fp8": LLAMA_8B,
    "llama-fp8": quant("llama-ct-w8a8-int8", FP8),
    "deepseek-v3-fp8": quant("deepseek-v3-ct-fp8-dynamic", FP8),
    "llama-modelopt-fp8": MODELOPT,
    "deepseek-v3-modelopt-fp8": json.loads(
        (HERE.parent / "modelopt" / "deepseek-v3-modelopt-fp8.config.json").read_text()),
}

if __name__ == "__main__":
    for name, cfg in CASES.items():
        (HERE / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
