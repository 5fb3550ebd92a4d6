"""Record what vLLM 0.33 builds, rank by rank, for NVIDIA's Nemotron VL remote-code
checkpoints (`NemotronH_Nano_VL_V2`, nano_nemotron_vl.py + radio.py) and Molmo
(`MolmoForCausalLM`, molmo.py): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8,
every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), and each
under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_nemo/record_mm_nemo.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); that file
registers this folder's nemo_vl_config.py (NemotronNanoVLV2Config for model_type
NemotronH_Nano_VL_V2, and its tokenizer stand-in) and molmo_config.py (MolmoConfig for
model_type molmo): the checkpoints' remote code, rewritten (those files say how).
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc
sys.path.insert(0, str(HERE))

TPS = (1, 2, 4, 8)
LMO, DATA = tr.LMO, tr.DATA
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
NO_INPUT = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
NO_ALL = ("--limit-mm-per-prompt", {"image": 0, "video": 0, "audio": 0})
OPTIONS = {
    "nvidia-nemotron-nano-12b-v2-vl-bf16": (LMO, DATA, NO_IMAGE, NO_INPUT, NO_ALL),
    "tiny-radio-base-video2": (LMO, DATA),
    "molmo-7b-d-0924": (LMO, DATA, NO_IMAGE),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS))


if __name__ == "__main__":
    main()
