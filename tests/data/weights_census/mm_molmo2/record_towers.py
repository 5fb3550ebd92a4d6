"""Record what vLLM 0.33 builds, rank by rank, for Molmo2 (`Molmo2ForConditionalGeneration`,
molmo2.py): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter
count, bytes by dtype, buffers; rank 0's parameters by name), and each under the multimodal
serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 nice -n 19 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_molmo2/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); that
file registers this folder's molmo2_config.py (Molmo2Config for model_type molmo2: the
checkpoints' remote code, rewritten; that file says how).
"""
# ruff: noqa
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

TPS = (1, 2, 4, 8)
LMO, DATA = tr.LMO, tr.DATA
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
NO_INPUT = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
OPTIONS = {
    "molmo2-8b": (LMO, DATA, NO_IMAGE, NO_INPUT),
    "tiny-molmo2": (LMO, DATA),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS))


if __name__ == "__main__":
    main()
