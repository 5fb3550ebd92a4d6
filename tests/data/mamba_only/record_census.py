"""Dev tool (not a test, not run by CI): what vLLM 0.33.0 builds on the meta device for the
attention-free Mamba configs in this folder, rank by rank at TP 1, 2 and 4 (-> census.json), with
../weights_census/record_census.py's own build and substitutions (imported; its answers.json is
not touched).

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1200 ~/.cache/vllm-oracle/venv/bin/python tests/data/mamba_only/record_census.py [DIR]

(DIR: another folder's configs, its census.json: tests/data/lfm2.)
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_census", HERE.parent / "weights_census" / "record_census.py")
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)                    # vLLM imported, every substitution applied
import torch, vllm


def main():
    rc.rqn.rmm_main_env()
    out = {"vllm_version": vllm.__version__, "torch": torch.__version__,
           "substitutions": rc.SUBSTITUTIONS, "cases": {}}
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for p in sorted(folder.glob("*.config.json")):
        try:
            out["cases"][p.name] = rc.record(p.name, json.loads(p.read_text()), (1, 2, 4))
        except Exception as e:           # the config refused before any build
            out["cases"][p.name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
        (folder / "census.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
