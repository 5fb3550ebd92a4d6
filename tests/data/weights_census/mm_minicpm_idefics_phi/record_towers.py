"""Record what vLLM 0.33 builds, rank by rank, for MiniCPM-V, Idefics3 / SmolVLM and
Phi-3.5-vision / Phi-4-multimodal (the configs here): every ``*.config.json`` of this folder at
TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by
name), each under the multimodal serving options of OPTIONS, and each base config's KV cache
specs at TP 1 as the KV-spec census records them (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_minicpm_idefics_phi/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); every
one is listed in answers.json.
MiniCPM-V's, Phi-3-vision's and Phi-4-multimodal's checkpoints bring their config class as
remote code (transformers 5.20.2 and vLLM have none): remote_configs.py's classes are
registered with AutoConfig for their model_type, plain PreTrainedConfig subclasses that keep
every key of config.json as an attribute (Phi-3-vision's and Phi-4's set before
PreTrainedConfig's own __init__, whose RoPE standardisation would otherwise swallow
rope_scaling) and, for MiniCPM-V, make ``vision_config`` a SiglipVisionConfig as its
configuration_minicpm.py does (its default: so400m at 980 px), so vLLM loads these configs with
AutoConfig as it would the remote classes.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc

sys.path.insert(0, str(HERE))
import remote_configs                           # (record_kv_specs registered them already)
remote_configs.register()

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, a limit of 0), and the encoder's data-parallel mode (MiniCPM-V
# takes it; Idefics3 / SmolVLM and Phi-3-vision fall back to "weights")
LMO, DATA = tr.LMO, tr.DATA
OPTIONS = {
    "minicpm-v-2_6": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0}),
                      ("--limit-mm-per-prompt", {"image": 0, "video": 0})),
    "minicpm-llama3-v-2_5": (LMO, DATA),
    "minicpm-v-4": (LMO, DATA),
    "minicpm-v-4_5": (LMO, DATA),
    "tiny-minicpm-v-2_6-drop": (LMO,),
    "tiny-minicpm-v-4_5-default-tower": (LMO,),
    "idefics3-8b-llama3": (LMO, DATA),
    "smolvlm2-2.2b-instruct": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0})),
    "smolvlm-256m-instruct": (LMO,),
    "tiny-smolvlm-partial-tower": (LMO,),
    "phi-3.5-vision-instruct": (LMO, DATA),
    "tiny-phi3v-last-layer": (LMO,),
    "phi-4-multimodal-instruct": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0}),
                                  ("--limit-mm-per-prompt", {"audio": 0})),
    "tiny-phi4mm-small-audio": (LMO, ("--limit-mm-per-prompt", {"audio": 0})),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), kv_specs=True)


if __name__ == "__main__":
    main()
