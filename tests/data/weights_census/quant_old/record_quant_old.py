"""Record what vLLM 0.33 builds, rank by rank, for the configs here (`*.config.json`, written by
make_cases.py) as an H100 would start them (-> answers.json): every rank at TP 1, 2, 4 and 8
(parameters, bytes by dtype, rank 0's names), or vLLM's refusal; with `--real-device NAME ...`
instead, TP 1 built on the CPU rather than the meta device (-> real_device.json): the
Transformers backend casts every parameter still on the meta device, and only those, to the
model dtype (base.py init_parameters), so a meta build shows the attention's compressed-tensors
k/v/q scales, float32 on a real device, in the model dtype.

A development tool, never run by the tests. It loads ../families/record_families.py (and
through it ../int_quant's and ../modelopt's H100 substitutions). From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/quant_old/record_quant_old.py [CASE ...]

(ORACLE_HOME=~/.cache/vllm-oracle; CT_PKGS as ../int_quant/README.md makes it.)
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location(
    "record_families", HERE.parent / "families" / "record_families.py")
rf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rf)
rc = rf.rc
import torch

TPS = (1, 2, 4, 8)


def cpu_build(d, mc, tp, rank, detail):
    """../record_census.py's build on the CPU device rather than meta."""
    rc.set_tp(tp, rank)
    vc = rc.VllmConfig(model_config=mc, parallel_config=rc.ParallelConfig(),
                       cache_config=rc.CacheConfig(), device_config=rc.DeviceConfig(device="cpu"),
                       load_config=rc.LoadConfig(load_format="dummy", device="cpu"))
    with rc.set_current_vllm_config(vc), rc.set_default_torch_dtype(mc.dtype), \
            torch.device("cpu"):
        model = rc.initialize_model(vc)
    params = list(model.parameters())
    return {"param_bytes_by_dtype": rc.by_dtype(params),
            "param_numel_by_name": rc.pattern_numel(model),
            "attn_scales_dtype": {n: str(p.dtype) for n, p in model.named_parameters()
                                  if ".attn." in n and ".layers.0." in n or ".h.0.attn.k" in n}}


def real_device(names):
    """TP 1 of `names` built on the CPU device: bytes by dtype and the attention's scales."""
    rc.build = cpu_build
    out = {}
    for name in names:
        rec = rc.record(f"weights_census/quant_old/{name}",
                        json.loads((HERE / name).read_text()), (1,))
        out[name] = rec["tp"]["1"][0]
        out[name].pop("param_numel_by_name")
    (HERE / "real_device.json").write_text(json.dumps(out, indent=1) + "\n")


def main():
    rc.rqn.rmm_main_env()
    if sys.argv[1:2] == ["--real-device"]:
        return real_device(sys.argv[2:])
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rf.vllm.__version__, "torch": torch.__version__, "cases": {}})
    answers["substitutions"] = sorted(set(rf.riq.SUBSTITUTIONS) | set(rf.rmo.SUBSTITUTIONS))
    todo = {p.name: json.loads(p.read_text()) for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        key = f"weights_census/quant_old/{name}"
        try:
            answers["cases"][key] = rc.record(key, todo[name], TPS)
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
