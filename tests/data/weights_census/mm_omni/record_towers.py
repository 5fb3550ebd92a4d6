"""Record what vLLM 0.33 builds, rank by rank, for Qwen2-Audio, Qwen2.5-Omni and Qwen3-Omni
(their thinkers; the configs here): every ``*.config.json`` of this folder at TP 1, 2, 4 and
8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), and
each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_omni/record_towers.py [CASE ...]

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
# encoder's data-parallel mode (which none of these classes declares: vLLM falls back)
LMO, DATA = tr.LMO, tr.DATA
NO_AUDIO = ("--limit-mm-per-prompt", {"audio": 0})
NO_VISION = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
OPTIONS = {
    "qwen2-audio-7b-instruct": (LMO, NO_AUDIO, DATA),
    "qwen2.5-omni-7b": (LMO, NO_AUDIO, NO_VISION, DATA, ("--limit-mm-per-prompt", {"image": 0})),
    "qwen2.5-omni-3b": (LMO,),
    "qwen3-omni-30b-a3b-instruct": (LMO, NO_AUDIO, NO_VISION, DATA),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS))


if __name__ == "__main__":
    main()
