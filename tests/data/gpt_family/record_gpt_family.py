# ruff: noqa
"""Record what vLLM 0.33 builds for the *.config.json here (published checkpoints' configs of
the architectures that name their sizes by their own keys: GPT-2's n_layer, ChatGLM's
num_layers, DBRX's d_model, the original Falcon's RefinedWeb keys, ...) -> answers.json: the
per-layer KV cache specs at TP 1 (as ../kv_spec_census/record_kv_specs.py collects them) and
the parameters and buffers of every rank at TP 1, 2, 4 and 8 (as
../weights_census/record_census.py records them), for tests/test_gpt_family.py.

A development tool, never run by the tests. From the project root (ORACLE_HOME=~/.cache/vllm-oracle):

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1500 $ORACLE_HOME/venv/bin/python tests/data/gpt_family/record_gpt_family.py [NAME ...]

Every substitution is the two census tools' (imported; listed in answers.json); the weights are
built at the model's own max_model_len (record_census.py's 4,096 is longer than most of these).
"""
import importlib.util, json, re, sys, traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, every substitution applied
rc = rks.rc
# record_census builds at max_model_len 4,096, longer than GPT-2's 1,024 or Bloom's 2,048 (vLLM
# refuses it): these are built at the model's own length (no parameter depends on it)
_model_config = rc.ModelConfig
rc.ModelConfig = lambda **k: _model_config(**{a: b for a, b in k.items() if a != "max_model_len"})
# Falcon's ALiBi slopes (falcon-rw-1b) read with .tolist(), as Bloom's: computed on the CPU
from vllm.model_executor.models import falcon
falcon._get_alibi_slopes = (lambda f: lambda *a, **k: rks._on_cpu(f, *a, **k))(
    falcon._get_alibi_slopes)
SUBSTITUTIONS = rks.SUBSTITUTIONS + [
    "weights built at the model's own max_model_len (no max_model_len passed)",
    "Falcon's ALiBi slopes computed on the CPU (a constant read with .tolist())"]


def fold(weights):
    """Rank 0's parameters by name with GPT-style layer indices folded too (transformer.h.N.),
    as record_census folds model.layers.N."""
    for ranks in weights.get("tp", {}).values():
        names = ranks[0].get("param_numel_by_name")
        if names:
            out = {}
            for k, v in names.items():
                k = re.sub(r"\.h\.\d+\.", ".h.*.", k)
                out[k] = out.get(k, 0) + v
            ranks[0]["param_numel_by_name"] = out
    return weights


def main():
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rks.vllm.__version__, "torch": rks.torch.__version__,
                "cases": {}})
    answers["substitutions"] = SUBSTITUTIONS
    names = sys.argv[1:] or sorted(p.name.removesuffix(".config.json")
                                   for p in HERE.glob("*.config.json"))
    for name in names:
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        out = {}
        try:
            out["kv"] = rks.build(name, cfg)
        except Exception as e:
            out["kv"] = {"refused": f"{type(e).__name__}: {e}"[:500],
                         "traceback_tail": traceback.format_exc().splitlines()[-3:]}
        try:
            out["weights"] = fold(rc.record(name, cfg, rc.TPS))
        except Exception as e:
            out["weights"] = {"refused": f"{type(e).__name__}: {e}"[:500]}
        print(name, "kv", "refused" if "refused" in out["kv"] else len(out["kv"]["specs"]),
              file=sys.stderr, flush=True)
        answers["cases"][name] = out
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
