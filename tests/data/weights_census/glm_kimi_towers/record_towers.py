"""Record what vLLM 0.33 builds, rank by rank, for GLM-4.1V, GLM-4.5V, Kimi-VL and Kimi-K2.5
(the configs here): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank
(parameter count, bytes by dtype, buffers; rank 0's parameters by name), and each under the
multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/glm_kimi_towers/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); every
one is listed in answers.json.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, and a limit of 0 for each of its modalities), and the encoder's
# data-parallel mode (all three classes support it)
LMO, DATA = tr.LMO, tr.DATA
OPTIONS = {
    "glm-4.1v-9b-thinking": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0}),
                             ("--limit-mm-per-prompt", {"image": 0, "video": 0})),
    "glm-4.5v": (LMO, DATA),
    "kimi-vl-a3b-instruct": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0})),
    "kimi-k2.5": (LMO, DATA, ("--limit-mm-per-prompt", {"vision_chunk": 0})),
    "tiny-kimi-k2.5-flags": (LMO,),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS))


if __name__ == "__main__":
    main()
