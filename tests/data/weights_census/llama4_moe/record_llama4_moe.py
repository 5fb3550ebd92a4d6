"""Record what vLLM 0.33 builds, rank by rank, for the Llama 4 configs here (Maverick's
interleaved dense and MoE layers, and tiny variants of interleave_moe_layer_step): every
``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank, with its vision tower and
under --language-model-only (-> answers.json); with ``--kv``, each config's per-layer KV cache
specs at TP 1 as ../../kv_spec_census/record_kv_specs.py's `build` collects them (-> kv_specs.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/llama4_moe/record_llama4_moe.py [--kv | CASE ...]

It executes ../llava_towers/record_towers.py (and through it its substitutions, listed in
answers.json) and builds each case with the same `record`.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_towers", HERE.parent / "llava_towers" / "record_towers.py")
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)                    # vLLM imported, every substitution applied
rc = rt.rc


def cases():
    out = {}
    for p in sorted(HERE.glob("*.config.json")):
        base = p.name[: -len(".config.json")]
        out[base] = (base, None)
        out[rt.case_name(base, *rt.LMO)] = (base, rc.mm_kwargs(*rt.LMO))
    return out


def kv_specs():
    out = {"vllm_version": rc.vllm.__version__, "configs": {}}
    for p in sorted(HERE.glob("*.config.json")):
        cfg = json.loads(p.read_text())
        out["configs"][p.name[: -len(".config.json")]] = rt.rks.build(cfg["architectures"][0], cfg)
    (HERE / "kv_specs.json").write_text(json.dumps(out, indent=1) + "\n")


def main():
    rc.rqn.rmm_main_env()
    if sys.argv[1:] == ["--kv"]:
        return kv_specs()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}})
    answers["substitutions"] = rt.rks.SUBSTITUTIONS
    todo = cases()
    for name in sys.argv[1:] or list(todo):
        base, mm = todo[name]
        cfg = json.loads((HERE / f"{base}.config.json").read_text())
        try:
            answers["cases"][name] = rc.record(name, cfg, rt.TPS, mm)
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
