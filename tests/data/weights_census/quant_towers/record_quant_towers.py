"""Record what vLLM 0.33 builds, rank by rank, for the quantised multimodal configs here: every
``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes by
dtype, buffers; rank 0's parameters by name), or the refusal vLLM raised (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/quant_towers/record_quant_towers.py [CASE ...]

It executes ../../kv_spec_census/record_kv_specs.py first for its substitutions (and through
it ../record_census.py's, whose `record` builds each case), then adds
../int_quant/record_int_quant.py's (an H100's platform, no kernel chosen), as
../llava_towers/record_towers.py does for its AWQ cases; every one is listed in answers.json.
The ModelOpt cases (``modelopt`` in the name) are recorded in a run of their own naming them,
with ../modelopt/record_modelopt.py's substitutions added.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rks = _load("record_kv_specs", HERE.parents[1] / "kv_spec_census" / "record_kv_specs.py")
rc = rks.rc
riq = _load("record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
rks.SUBSTITUTIONS += [s for s in riq.SUBSTITUTIONS if s not in rks.SUBSTITUTIONS]
if any("modelopt" in n for n in sys.argv[1:]):
    # (ModelOpt checkpoints, recorded in a run of their own: ../modelopt/record_modelopt.py's
    # H100 platform and kernel substitutions too)
    rmo = _load("record_modelopt", HERE.parent / "modelopt" / "record_modelopt.py")
    rks.SUBSTITUTIONS += [s for s in rmo.SUBSTITUTIONS if s not in rks.SUBSTITUTIONS]
# (InternVL's remote-code classes: ../internvl_chat/internvl_chat_config.py's config classes
# registered, as ../internvl_chat/record_internvl_chat.py does)
sys.path.insert(0, str(HERE.parent / "internvl_chat"))
import internvl_chat_config

internvl_chat_config.register()
TPS = (1, 2, 4, 8)
# (cases recorded with the tower skipped too: a case "<config> --language-model-only", its
# option passed to vLLM's ModelConfig as ../llava_towers/record_towers.py passes it)
LMO = ("--language-model-only", True)
OPTIONS = {"tiny-llava-clip-ct-w4a16": (LMO,), "tiny-llava-clip-fp8-block": (LMO,),
           "tiny-mistral3-modelopt-fp8": (LMO,)}


def record_names(here, names, extra=()):
    """Record the cases `names` (a config of `here`, then the option `rc.parse_mm` reads) at TPS
    into `here`/answers.json, written after each (a config refused before any build: its
    error), the substitutions of earlier runs kept (the ModelOpt cases' own), rks's and `extra`
    added. The quantised tower censuses beside this one record with it too."""
    rc.rqn.rmm_main_env()
    path = here / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}})
    answers["substitutions"] = list(dict.fromkeys(
        answers.get("substitutions", []) + rks.SUBSTITUTIONS + list(extra)))
    for name in names:
        base, flag, value = rc.parse_mm(name)
        cfg = json.loads((here / f"{base}.config.json").read_text())
        mm = rc.mm_kwargs(flag, value) if flag else None
        try:
            answers["cases"][name] = rc.record(name, cfg, TPS, mm)
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


def configs(here):
    """The bases of `here`'s configs, sorted."""
    return sorted(p.name[: -len(".config.json")] for p in here.glob("*.config.json"))


def main():
    names = sys.argv[1:] or configs(HERE) + [
        f"{base} {flag}" for base, opts in OPTIONS.items() for flag, _ in opts]
    record_names(HERE, names, internvl_chat_config.SUBSTITUTIONS)


if __name__ == "__main__":
    main()
