# ruff: noqa
"""Record what vLLM 0.33 builds, rank by rank, for the configs of this folder (the text classes
its Transformers backend serves): every ``*.config.json`` here at TP 1 and 2, every rank
(parameter count, bytes by dtype, buffers; rank 0's parameters by name) (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock timeout 1500 nice -n 10 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/transformers_rope/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions; every one is listed in answers.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

TPS = (1, 2)


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, {}))


if __name__ == "__main__":
    main()
