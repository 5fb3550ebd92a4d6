# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds for the quantised Nemotron-NAS configs here
(`*.config.json`, written by make_nas_quant.py): rank 0's parameters, bytes by dtype and
buffers at TP 1, 2, 4, 8 (every rank of these classes is alike) or vLLM's refusal, and the
KVCacheConfig planned on what `kvcli config --gpu-memory-gib 80` leaves (PLAN_AT) ->
answers.json. It loads ../weights_census/modelopt/record_modelopt.py for its H100
substitutions (the ModelOpt / fp8 platform, no kernel chosen) and ../nemotron_nas/record_nas.py
for the stand-in config class and its build. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/nemotron_nas_quant/record_nas_quant.py [NAME ...]
"""
import importlib.util, json, sys, textwrap, time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


rmo = load("record_modelopt", HERE.parent / "weights_census" / "modelopt" / "record_modelopt.py")
rn = load("record_nas", HERE.parent / "nemotron_nas" / "record_nas.py")

TPS = (1, 2, 4, 8)
# name -> {TP: bytes kvcli config --gpu-memory-gib 80 leaves a rank for the KV cache}
PLAN_AT = json.loads((HERE / "plan_at.json").read_text()) if (HERE / "plan_at.json").exists() \
    else {}


def record(name, cfg):
    mml = 131072 if not name.startswith("tiny") else 4096
    out = {"tp": {}}
    for tp in TPS:
        t0 = time.perf_counter()
        try:
            m, vc, sp = rn.build(rn.model_config(cfg, mml), tp, 0)
            row = {"rank": 0, **rn.record_dsv4.weights(m, detail=name.startswith("tiny"))}
            row.pop("scratch", None)
            if str(tp) in PLAN_AT.get(name, {}):
                row["planning_80_gib"] = rn.record_dsv4.planning(
                    rn.build(rn.model_config(cfg, mml))[1], sp, PLAN_AT[name][str(tp)])
                row["planning_80_gib"].pop("groups", None)
            del m
        except Exception as e:
            row = {"rank": 0, **rn.refused(e)}
        out["tp"][str(tp)] = row
        print(name, f"TP {tp}", f"{time.perf_counter() - t0:.1f} s", file=sys.stderr,
              flush=True)
    return out


def main():
    rn.rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = json.loads(path.read_text()) if path.exists() else {"cases": {}}
    answers["substitutions"] = [textwrap.wrap(s, 90) for s in rmo.SUBSTITUTIONS + [
        "nemotron-nas: ../nemotron_nas/nas_config.DeciLMConfig (the remote config class's "
        "stand-in)", "attention backend: FLASH_ATTN"]]
    todo = {p.name[:-len(".config.json")]: json.loads(p.read_text())
            for p in sorted(HERE.glob("*.config.json"))}
    for name in sys.argv[1:] or list(todo):
        try:
            answers["cases"][name] = record(name, todo[name])
        except Exception as e:
            answers["cases"][name] = rn.refused(e)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
