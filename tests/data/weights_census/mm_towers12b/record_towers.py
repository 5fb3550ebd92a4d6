"""Record what vLLM 0.33 builds, rank by rank, for the classes of this folder (LLaVA-OneVision-2,
...: the configs here): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank
(parameter count, bytes by dtype, buffers; rank 0's parameters by name), each under the
multimodal serving options of OPTIONS, and each base config's KV cache specs at TP 1 as the
KV-spec census records them (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 nice -n 19 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_towers12b/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it census_configs.py, which registers towers12b_config.py's config
class); every one is listed in answers.json.
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
NO_IMAGE_VIDEO = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, limits of 0) and the encoder's data-parallel mode
OPTIONS = {
    # (LLaVA-OneVision-2's tower serves images and video: an image limit of 0 alone keeps it;
    # it takes no data mode: vLLM falls back to TP)
    "llava-onevision-2-8b": (LMO, NO_IMAGE, NO_IMAGE_VIDEO, DATA),
    "tiny-llava-onevision-2": (NO_IMAGE_VIDEO, DATA),
    # (Isaac declares the data mode)
    "isaac-0.1": (LMO, NO_IMAGE, DATA),
    "tiny-isaac": (DATA,),
    # (EXAONE 4.5's tower is Qwen2.5-VL's, GQA: images and video; it declares the data mode)
    "exaone-4.5-33b": (LMO, NO_IMAGE_VIDEO, DATA),
    "tiny-exaone-4.5": (DATA,),
    # (Qianfan-OCR: InternVLChatModel's tower, marked image and video; the data mode taken)
    "qianfan-ocr": (LMO, NO_IMAGE, NO_IMAGE_VIDEO, DATA),
    "tiny-qianfan-ocr": (DATA,),
    # (Nemotron Omni: RADIO and Parakeet under one tower mark, image, video and audio; an audio
    # limit of 0 alone keeps both)
    # (Alpamayo 2 Super: Qwen3-VL's class, images only)
    "tiny-alpamayo2-super-nested": (LMO, NO_IMAGE, DATA),
    "nemotron-omni-12b-synthetic": (LMO, ("--limit-mm-per-prompt", {"audio": 0}), (
        "--limit-mm-per-prompt", {"image": 0, "video": 0, "audio": 0})),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), kv_specs=True)


if __name__ == "__main__":
    main()
