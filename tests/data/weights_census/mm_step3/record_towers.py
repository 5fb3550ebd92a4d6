"""Record what vLLM 0.33 builds, rank by rank, for Step3-VL, Step3 text and GLM-4V (glm-4v-9b)
(the configs here): every ``*.config.json`` of this folder at TP 1, 2, 4 and
8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), and
each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_step3/record_towers.py [CASE ...]

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
# (option, value) pairs each base is recorded with beside its plain build: the towers dropped
# (--language-model-only, a limit of 0 for the audio and for the vision modalities), and the
# encoder's data-parallel mode (Step3-VL declares it; GLM-4V does not: vLLM falls back)
LMO, DATA = tr.LMO, tr.DATA
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
OPTIONS = {
    "step3": (LMO, NO_IMAGE, DATA),
    "tiny-step3": (LMO, NO_IMAGE, DATA),
    "glm-4v-9b-glm4v-arch": (LMO, NO_IMAGE, DATA),
    "tiny-glm-4v": (LMO, DATA),
}


def one_refusal(case):
    """A case refused alike at every TP, as the class is built (glm-4v-9b's published
    ChatGLMModel): one refusal for the case, as a config refused before any build."""
    words = {r[0].get("refused") for r in case["tp"].values()}
    return {"refused": words.pop()} if len(words) == 1 and None not in words else case


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), collapse=one_refusal)


if __name__ == "__main__":
    main()
