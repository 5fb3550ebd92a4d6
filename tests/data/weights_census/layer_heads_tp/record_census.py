"""Record what vLLM 0.33 builds, rank by rank, for the configs of this folder, whose layers have
query heads of their own (Laguna): every ``*.config.json`` here at TP 1, 2, 4 and 8, every rank
(parameter count, bytes by dtype, buffers; rank 0's parameters by name) (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/layer_heads_tp/record_census.py [CASE ...]

It executes ../../kv_spec_census/record_kv_specs.py first for its substitutions (and through
it ../record_census.py's, whose `record` builds each case); every one is listed in
answers.json.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parents[1] / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, every substitution applied
rc = rks.rc

TPS = (1, 2, 4, 8)
OPTIONS: dict = {}      # (a text model: no multimodal serving options)


def case_name(base, flag, value):
    if value is True:
        return f"{base} {flag}"
    v = json.dumps(value, separators=(",", ":")) if isinstance(value, dict) else value
    return f"{base} {flag} {v}"


def cases():
    out = {}
    for p in sorted(HERE.glob("*.config.json")):
        base = p.name[: -len(".config.json")]
        out[base] = (base, None)
        for flag, value in OPTIONS.get(base, ()):
            out[case_name(base, flag, value)] = (base, rc.mm_kwargs(flag, value))
    return out


def main():
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}})
    answers["substitutions"] = rks.SUBSTITUTIONS
    todo = cases()
    for name in sys.argv[1:] or list(todo):
        base, mm = todo[name]
        cfg = json.loads((HERE / f"{base}.config.json").read_text())
        try:
            case = rc.record(name, cfg, TPS, mm)
            words = {r[0].get("refused") for r in case["tp"].values()}
            if len(words) == 1 and None not in words:
                # (refused alike at every TP, as the class is built: glm-4v-9b's published
                # ChatGLMModel: one refusal for the case, as a config refused before any build)
                case = {"refused": words.pop()}
            answers["cases"][name] = case
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
