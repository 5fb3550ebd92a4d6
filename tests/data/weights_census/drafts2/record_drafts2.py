# ruff: noqa
"""Dev tool (not a test): ../record_drafts.py (imported, run as it runs) over the MTP targets
of configs.py beside this file (ERNIE-4.5's ErnieMTP, Step-3.5's Step3p5MTP), each written
once as a model folder ../drafts/<case>/ (-> ../drafts_answers.json, cases `drafts/<case>`):

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/drafts2/record_drafts2.py --all-ranks [CASE ...]
"""
import importlib.util, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_c = importlib.util.spec_from_file_location("configs", HERE / "configs.py")
configs = importlib.util.module_from_spec(_c)
_c.loader.exec_module(configs)
_r = importlib.util.spec_from_file_location("record_drafts", HERE.parent / "record_drafts.py")
rd = importlib.util.module_from_spec(_r)
_r.loader.exec_module(rd)
for case in configs.CASES:
    rd.CASES[f"drafts/{case}"] = (
        lambda c=case: (rd._written(c, configs.config(c)), "mtp", None))

if __name__ == "__main__":
    # (step3p5-hub, 3 modules: its TP-1 bytes and groups are in ./specs_answers.json and
    # ../mtpmulti/'s, not recorded rank by rank here)
    names = [a for a in sys.argv[1:] if a != "--all-ranks"] or [
        c for c in configs.CASES if c != "step3p5-hub"]
    sys.argv[1:] = [f"drafts/{n}" for n in names]
    rd.main()
