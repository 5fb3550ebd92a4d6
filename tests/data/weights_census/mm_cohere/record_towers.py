"""Record what vLLM 0.33 builds, rank by rank, for Command A Vision, Aria, BLIP-2, LightOnOCR
and Granite 4 Vision (the configs here): every ``*.config.json`` of this folder at TP 1, 2, 4
and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), and
each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_cohere/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); every
one is listed in answers.json.
"""
# ruff: noqa
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, the image limit 0), and the encoder's data-parallel mode (none of
# these classes declares it: vLLM falls back to weights)
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
OPTIONS = {
    "command-a-vision": (tr.LMO, NO_IMAGE, tr.DATA),
    "tiny-cohere2-vision": (tr.LMO, tr.DATA),
    "lightonocr-1b": (tr.LMO, NO_IMAGE, tr.DATA),
    "tiny-lightonocr-hf": (tr.LMO,),
    "aria": (tr.LMO, NO_IMAGE, tr.DATA),
    "tiny-aria": (tr.LMO,),
    "blip2-opt-2.7b": (tr.LMO, NO_IMAGE, tr.DATA),
    "tiny-blip2-opt": (tr.LMO,),
    "granite4-vision-synthetic": (tr.LMO, NO_IMAGE, tr.DATA),
    "tiny-granite4-vision": (tr.LMO,),
}


def one_refusal(case):
    """A case refused alike at every TP, as the class is built (LightOnOCR on transformers'
    lighton_ocr config): one refusal for the case, as a config refused before any build."""
    words = {r[0].get("refused") for r in case["tp"].values()}
    return {"refused": words.pop()} if len(words) == 1 and None not in words else case


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), collapse=one_refusal)


if __name__ == "__main__":
    main()
