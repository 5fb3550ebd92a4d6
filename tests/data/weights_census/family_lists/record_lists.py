"""Record what vLLM 0.33 builds, rank by rank, for the configs here (written by
make_list_cases.py) as an H100 would start them (-> answers.json): ../families/
record_families.py's build and substitutions at TP 1, 2 and 4. A development tool, never run
by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/family_lists/record_lists.py [NAME.config.json ...]
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_families",
                                              HERE.parent / "families" / "record_families.py")
rf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rf)


def main():
    rf.record_folder(HERE)


if __name__ == "__main__":
    main()
