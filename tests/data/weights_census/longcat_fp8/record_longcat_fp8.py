# ruff: noqa
"""Dev tool (not a test): what vLLM 0.33 builds, rank by rank, of LongCat-Flash as an fp8 block
checkpoint (the configs here: ../longcat/'s with the quantization_config the DeepSeek-V3 fp8
checkpoints carry, fp8 e4m3, dynamic activations, 128 x 128 weight blocks) -> answers.json,
for tests/test_longcat_fp8.py. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/longcat_fp8/record_longcat_fp8.py

../record_census.py's `record` (every rank at TP 1, 2, 4 and 8; its substitutions, listed in
the output), as ../longcat/record_longcat.py builds the unquantised configs.
"""
import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_census", HERE.parent / "record_census.py")
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)


def main():
    rc.rqn.rmm_main_env()
    answers = {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__,
               "substitutions": rc.SUBSTITUTIONS, "cases": {}}
    for p in sorted(HERE.glob("*.config.json")):
        cfg = json.loads(p.read_text())
        key = f"weights_census/longcat_fp8/{p.name}"
        try:
            answers["cases"][key] = rc.record(key, cfg, (1, 2, 4, 8))
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
    (HERE / "answers.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
