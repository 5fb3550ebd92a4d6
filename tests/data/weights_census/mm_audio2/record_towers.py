"""Record what vLLM 0.33 builds, rank by rank, for Ultravox, Qwen3-ASR, Audio Flamingo 3,
GLM-ASR, Granite Speech and MiDashengLM (the configs here): every ``*.config.json`` of this
folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's
parameters by name), each under the multimodal serving options of OPTIONS, and each base
config's KV cache specs at TP 1 as the KV-spec census records them (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_audio2/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); every one
is listed in answers.json.
"""
# ruff: noqa
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

# MiDashengLM's module imports torchaudio.functional, absent here (no wheel for this torch):
# an import-only placeholder whose melscale_fbanks returns zeros of torchaudio's shape (n_freqs
# x n_mels) in the default dtype, as torchaudio's linspace-built banks are: the buffer's bytes
# are the same; the spectrogram functions are not called when a model is built
if "torchaudio" not in sys.modules:
    import types, torch
    _ta, _taf = types.ModuleType("torchaudio"), types.ModuleType("torchaudio.functional")
    _taf.melscale_fbanks = lambda n_freqs, f_min, f_max, n_mels, sample_rate, *a, **k: (
        torch.zeros(n_freqs, n_mels))
    _ta.functional = _taf
    sys.modules["torchaudio"], sys.modules["torchaudio.functional"] = _ta, _taf
    tr.rks.SUBSTITUTIONS = [*tr.rks.SUBSTITUTIONS,
                            "MiDashengLM: an import-only torchaudio whose melscale_fbanks gives "
                            "zeros of its shape and default dtype (record_towers.py)"]

TPS = (1, 2, 4, 8)
LMO, DATA = tr.LMO, tr.DATA
def LIMIT(**kw):
    return ("--limit-mm-per-prompt", kw)
OPTIONS = {
    "ultravox-v0_5-llama-3_1-8b-inline": (LMO, DATA, LIMIT(audio=0)),
    "ultravox-v0_5-llama-3_2-1b-inline": (LMO,),
    "tiny-ultravox-transformer-projector": (LMO,),
    "qwen3-asr-1_7b": (LMO, DATA, LIMIT(audio=0)),
    "qwen3-asr-0_6b": (LMO,),
    "audio-flamingo-3-hf": (LMO, DATA, LIMIT(audio=0)),
    "tiny-audio-flamingo-3": (LMO,),
    "glm-asr-nano-2512": (LMO, DATA, LIMIT(audio=0)),
    "tiny-glm-asr-gqa": (LMO,),
    "granite-speech-3_3-8b": (LMO, DATA, LIMIT(audio=0)),
    "granite-speech-3_3-2b": (LMO,),
    "tiny-granite-speech": (LMO,),
    "tiny-granite-speech-plus": (LMO,),
    "midashenglm-7b": (LMO, DATA, LIMIT(audio=0)),
    "tiny-midashenglm-layer-scale": (LMO,),
}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), kv_specs=True)


if __name__ == "__main__":
    main()
