# ruff: noqa
"""Record what vLLM 0.33 builds at TP 1 for this folder's configs (make_cases.py): every
``*.config.json`` here, or the refusal vLLM raised (-> answers.json). A development tool, never
run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1500 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/fp8_wrappers/record_fp8_wrappers.py [CASE ...]

../tower_recorder.py executes ../../kv_spec_census/record_kv_specs.py for its substitutions
(listed in answers.json) and builds each case with ../record_census.py's `record`.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

if __name__ == "__main__":
    tr.record_towers(HERE, (1,), tr.cases(HERE, {}))
