"""Record what vLLM 0.33 builds, rank by rank, for Ovis2.5 / Ovis2.6 (`Ovis2_5`,
`Ovis2_6ForCausalLM`, `Ovis2_6_MoeForCausalLM`: ovis2_5.py, siglip2navit.py) Ovis1.6 / Ovis2
(`Ovis`: ovis.py, aimv2.py, siglip.py), Eagle 2.5 (`Eagle2_5_VLForConditionalGeneration`:
eagle2_5_vl.py), OpenCUA (`OpenCUAForConditionalGeneration`: opencua.py) and Kanana-V
(`KananaVForConditionalGeneration`: kanana_v.py, timm's RegNet at /tmp/timm_pkg) (the configs
here):
every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes
by dtype, buffers; rank 0's parameters by name), and each under the multimodal serving options
of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; S=tests/data/mtp_draft/oracle_stubs_vision; HF_HUB_OFFLINE=1 \\
        VLLM_LOGGING_LEVEL=ERROR PYTHONPATH=$HOME/.cache/vllm-oracle/src:$S:/tmp/timm_pkg \\
        timeout 3000 nice -n 19 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_ovis/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); its
census_configs.py registers this folder's ovis_config.py and eagle_opencua_config.py (the
remote-code config classes, rewritten); every substitution is listed in answers.json.
"""
# ruff: noqa
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped,
# Ovis2.5's one modality of two at limit 0 (the tower kept), and the encoder's data-parallel
# mode (Ovis's classes do not declare it: vLLM falls back to weights; Eagle's and OpenCUA's do)
LMO, DATA = tr.LMO, tr.DATA
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
NO_INPUT = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
OPTIONS = {
    "ovis2.5-9b": (LMO, NO_IMAGE, NO_INPUT, DATA),
    "tiny-ovis2.6-naflex": (LMO, DATA),
    "ovis2-8b": (LMO, NO_IMAGE, DATA),
    "ovis1.6-gemma2-9b": (LMO,),
    "eagle2.5-8b": (LMO, NO_IMAGE, DATA),
    "tiny-eagle2.5-select": (DATA,),
    "opencua-7b": (LMO, NO_IMAGE, DATA),
    "kanana-1.5-v-3b": (LMO, DATA),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), kv_specs=True)


if __name__ == "__main__":
    main()
