# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft of GLM-OCR (method "mtp": config/speculative.py
rewrites a GlmOcrForConditionalGeneration config into GlmOcrMTPModel, class GlmOcrMTP) built
by ../../record_drafts.py's `record` (imported: the target by `initialize_model` on the meta
device, the draft by the V2 runner's `load_eagle_model`, the draft's own bytes after it shares
the target's embedding and LM head) at TP 1, 2, 4 and 8, every rank, for the targets
../glm-ocr.config.json and ../tiny-glm-ocr.config.json, each copied once as <case>/config.json
here (-> answers.json here):

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 nice -n 19 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_ocr/mtp/record_glm_ocr_mtp.py --all-ranks
"""
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_r = importlib.util.spec_from_file_location("record_drafts", HERE.parents[1] / "record_drafts.py")
rd = importlib.util.module_from_spec(_r)
_r.loader.exec_module(rd)
CASES = ("glm-ocr", "tiny-glm-ocr")


def _target(case):
    d = HERE / case
    if not (d / "config.json").exists():
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text((HERE.parent / f"{case}.config.json").read_text())
    return d, "mtp", None


if __name__ == "__main__":
    rd.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = {"vllm_version": rd.vllm.__version__, "torch": rd.torch.__version__,
               "substitutions": sorted(set(rd.rc.SUBSTITUTIONS + rd.rdm.SUBSTITUTIONS))
               + rd.SUBSTITUTIONS, "cases": {}}
    for case in CASES:
        rd.CASES[case] = lambda c=case: _target(c)
        answers["cases"][case] = rd.record(case)
        path.write_text(json.dumps(answers, indent=1) + "\n")
