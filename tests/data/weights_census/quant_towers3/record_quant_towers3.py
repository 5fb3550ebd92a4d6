"""Record what vLLM 0.33 builds, rank by rank, for the quantised configs here (MiniCPM-V,
Idefics3 / SmolVLM, Phi-3.5-vision, Phi-4-multimodal, Qwen2-Audio, Qwen2.5-Omni, Qwen3-Omni):
every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes
by dtype, buffers; rank 0's parameters by name), or the refusal vLLM raised (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/quant_towers3/record_quant_towers3.py [CASE ...]

It executes ../quant_towers/record_quant_towers.py (its substitutions: the KV-spec census's,
../int_quant's H100 platform, ../modelopt's when a case named holds "modelopt"; InternVL's
remote configs registered) and registers ../mm_minicpm_idefics_phi/remote_configs.py's config
classes for MiniCPM-V, Phi-3-vision and Phi-4-multimodal, as that folder's recorder does.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_quant_towers", HERE.parent / "quant_towers" / "record_quant_towers.py")
rqt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rqt)
rc, rks = rqt.rc, rqt.rks
sys.path.insert(0, str(HERE.parent / "mm_minicpm_idefics_phi"))
import remote_configs

remote_configs.register()
TPS = (1, 2, 4, 8)
LMO = ("--language-model-only", True)
# (MiniCPM-V takes --mm-encoder-tp-mode data: its tower whole on every rank)
DATA = ("--mm-encoder-tp-mode", "data")
OPTIONS = {"tiny-minicpm-v-2_6-ct-w4a16": (LMO, DATA),
           "tiny-minicpm-v-2_6-fp8-block": (LMO, DATA), "tiny-smolvlm-awq": (LMO,),
           "tiny-qwen2.5-omni-fp8-block": (LMO,),
           "tiny-minicpm-v-2_6-awq": (DATA,), "tiny-minicpm-v-2_6-modelopt-fp8": (DATA,),
           "tiny-minicpm-v-2_6-t512-awq": (DATA,), "tiny-minicpm-v-2_6-t512-fp8-block": (DATA,),
           "tiny-minicpm-v-2_6-t512-ct-w4a16": (DATA,)}


def case_name(base, flag, value):
    return f"{base} {flag}" if value is True else f"{base} {flag} {value}"


def main():
    names = sys.argv[1:] or rqt.configs(HERE) + [
        case_name(base, flag, value) for base, opts in OPTIONS.items() for flag, value in opts]
    rqt.record_names(HERE, names)


if __name__ == "__main__":
    main()
