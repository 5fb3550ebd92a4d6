"""Record what vLLM 0.33 builds, rank by rank, for InternVL's remote-code checkpoints
(`InternVLChatModel`, model_type internvl_chat): every ``*.config.json`` of this folder at TP
1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by
name), and each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/internvl_chat/record_internvl_chat.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case), then
registers internvl_chat_config.py's InternVLChatConfig for model_type internvl_chat (the
checkpoints' remote code, rewritten: that file says how) and its substitution of the video
token's lookup.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc
sys.path.insert(0, str(HERE))
import internvl_chat_config

internvl_chat_config.register()
TPS = (1, 2, 4, 8)
LMO, DATA = tr.LMO, tr.DATA
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
NO_INPUT = ("--limit-mm-per-prompt", {"image": 0, "video": 0})
OPTIONS = {
    "internvl3-8b": (LMO, DATA, NO_IMAGE, NO_INPUT),
    "internvl3-78b": (LMO, DATA, NO_INPUT),
    "tiny-internvit-6b-like-select-2": (LMO, DATA),
    "nvlm-d-72b": (LMO, DATA),
    "skywork-r1v-38b": (LMO, DATA, NO_IMAGE),
    "h2ovl-mississippi-2b": (LMO, DATA, NO_IMAGE),
    "tiny-skywork-r1v": (LMO, DATA, NO_IMAGE),
    "tiny-h2ovl": (NO_IMAGE, NO_INPUT),
    "tiny-nvlm-d-5-heads": (DATA,),
    "intern-s1-mini": (LMO, DATA, NO_IMAGE),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), internvl_chat_config.SUBSTITUTIONS)


if __name__ == "__main__":
    main()
