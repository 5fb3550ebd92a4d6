"""Record what vLLM 0.33 builds, rank by rank, for ERNIE-4.5-VL, ERNIE-4.5's text MoE and Keye-VL
(the configs here): every ``*.config.json`` of this folder at TP 1, 2, 4 and
8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), and
each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_ernie/record_towers.py [CASE ...]

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
sys.path.insert(0, str(HERE))
import ernie_config                             # ERNIE-4.5-VL's remote config class
import keye_config                              # Keye-VL's
ernie_config.register()
keye_config.register()

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the towers dropped
# (--language-model-only, limits of 0 for images and videos, an image limit alone), and the
# encoder's data-parallel mode
LMO, DATA = tr.LMO, tr.DATA
NO_VISION = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
OPTIONS = {
    "ernie-4.5-vl-28b-a3b-pt": (LMO, NO_VISION, NO_IMAGE, DATA),
    "tiny-ernie-vl-split-experts": (LMO,),
    "keye-vl-1_5-8b": (LMO, NO_VISION, DATA),
    "keye-vl-8b-preview": (LMO,),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS),
                     ernie_config.SUBSTITUTIONS + keye_config.SUBSTITUTIONS)


if __name__ == "__main__":
    main()
