"""Record what vLLM 0.33 builds, rank by rank, for the multimodal configs here (Llama 4,
Mistral 3, the LLaVA family, PaliGemma, InternVL): every ``*.config.json`` of this folder at
TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters
by name), and each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/llava_towers/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case):
mistral_common's import-only placeholder (llava.py, mistral3.py, pixtral.py import it),
QuickGELU without vLLM's compiled kernel (CLIP's activation), the registry's inspection in this
process; every one is listed in answers.json. The AWQ cases (``-awq`` in the name, recorded in a
run of their own) add ../int_quant/record_int_quant.py's (an H100's platform, no kernel chosen).
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, and a limit of 0 for each of its modalities), and the encoder's
# data-parallel mode where the class supports it (otherwise vLLM falls back to weights)
LMO, DATA = tr.LMO, tr.DATA
OPTIONS = {
    "llama-4-scout": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0})),
    "tiny-llama-4-projector-bias": (LMO, DATA),
    "mistral-small-3.1-24b": (LMO, DATA, ("--limit-mm-per-prompt", {"image": 0})),
    "pixtral-12b-hf": (LMO,),
    "llava-1.5-7b": (LMO, ("--limit-mm-per-prompt", {"image": 0})),
    "llava-v1.6-mistral-7b": (LMO,),
    "llava-onevision-qwen2-7b": (LMO, ("--limit-mm-per-prompt", {"image": 0}),
                                 ("--limit-mm-per-prompt", {"image": 0, "video": 0})),
    "paligemma-3b-pt-224": (LMO, DATA),
    "internvl3-8b-hf": (LMO, DATA),
    "tiny-llava-next-list-nobias": (LMO,),
}


def main():
    if any("-awq" in n for n in sys.argv[1:]):
        # AWQ checkpoints as an H100 builds them: ../int_quant/record_int_quant.py's platform
        # (CUDA capability 9.0) and its kernel substitutions, applied before these builds
        _q = importlib.util.spec_from_file_location(
            "record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
        riq = importlib.util.module_from_spec(_q)
        _q.loader.exec_module(riq)
        rks.SUBSTITUTIONS += [s for s in riq.SUBSTITUTIONS if s not in rks.SUBSTITUTIONS]
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS))


if __name__ == "__main__":
    main()
