# ruff: noqa
"""Dev tool (not a test): ../record_drafts.py (imported, run as it runs) over the multi-module
MTP targets of configs.py beside this file, each written once as a model folder
../drafts/<case>/ (-> ../drafts_answers.json, cases `drafts/<case>`):

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mtpmulti/record_mtpmulti.py --all-ranks [CASE ...]
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
    names = [a for a in sys.argv[1:] if a != "--all-ranks"] or list(configs.CASES)
    sys.argv[1:] = [f"drafts/{n}" for n in names] + (
        ["--all-ranks"] if "--all-ranks" in sys.argv else [])
    rd.main()
