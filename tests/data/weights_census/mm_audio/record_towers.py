"""Record what vLLM 0.33 builds, rank by rank, for LLaVA-NeXT-Video, MiniCPM-o, Voxtral and
InternS1-Pro (the configs here): every ``*.config.json`` of this folder at
TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by
name), each under the multimodal serving options of OPTIONS, and each base config's KV cache
specs at TP 1 as the KV-spec census records them (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_audio/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions (and through it ../record_census.py's, whose `record` builds each case); every one
is listed in answers.json. MiniCPM-o's and Intern-S1-Pro's checkpoints bring their config
classes as remote code: this folder's minicpmo_config.py and interns1_pro_config.py, registered
with AutoConfig by record_kv_specs.py (README.md); Voxtral's mel filter bank: mistral_common's
own (below).
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc

# (record_kv_specs.py registers this folder's MiniCPM-o and Intern-S1-Pro config classes and
# computes Intern-S1-Pro's FoPE frequencies on the CPU: listed in its SUBSTITUTIONS)

# Voxtral's encoder registers mistral_common's mel filter bank as a float32 buffer; the package
# is absent here (an import-only placeholder: record_kv_specs.py), so its own function is
# loaded from a copy installed apart (MISTRAL_COMMON: `pip install --target /tmp/mc_pkg
# --no-deps mistral_common==1.13.1` with the oracle venv's pip; audio.py and deprecation.py
# need numpy alone) and given to voxtral.py: the real (1 + window_size // 2) x num_mel_bins
MISTRAL_COMMON = Path("/tmp/mc_pkg/mistral_common")
if MISTRAL_COMMON.is_dir() and not hasattr(sys.modules.get("mistral_common"), "__file__"):
    for _name in ("deprecation", "audio"):
        _s = importlib.util.spec_from_file_location(f"mistral_common.{_name}",
                                                    MISTRAL_COMMON / f"{_name}.py")
        _m = sys.modules[f"mistral_common.{_name}"] = importlib.util.module_from_spec(_s)
        _s.loader.exec_module(_m)
    from vllm.model_executor.models import voxtral as _voxtral
    _voxtral.mel_filter_bank = _m.mel_filter_bank
    rks.SUBSTITUTIONS = [*rks.SUBSTITUTIONS,
                         "Voxtral: mistral_common 1.13.1's own mel_filter_bank (audio.py, from "
                         "a copy installed apart) in place of the placeholder's"]

TPS = (1, 2, 4, 8)
LMO, DATA = tr.LMO, tr.DATA
def LIMIT(**kw):
    return ("--limit-mm-per-prompt", kw)
OPTIONS = {
    "llava-next-video-7b-hf": (LMO, DATA, LIMIT(video=0), LIMIT(image=0)),
    "llava-next-video-34b-hf": (LMO,),
    "tiny-llava-next-video-max-pool": (LMO,),
    "minicpm-o-2_6": (LMO, DATA, LIMIT(audio=0), LIMIT(image=0), LIMIT(image=0, video=0)),
    "tiny-minicpm-o-4_5": (LMO, LIMIT(audio=0), LIMIT(image=0, video=0)),
    "voxtral-mini-3b-2507": (LMO,),
    "voxtral-mini-3b-2507-downsample": (LMO, DATA, LIMIT(audio=0)),
    "tiny-voxtral-downsample": (LMO,),
    "intern-s1-pro-bf16": (LMO, DATA),
    "tiny-intern-s1-pro-fope": (LMO,),
}


def one_refusal(rec):
    """A case refused at every TP, as vLLM refuses Voxtral's HF config: a refused case (its
    ranks kept)."""
    if all("refused" in ranks[0] for ranks in rec["tp"].values()):
        return {"refused": rec["tp"]["1"][0]["refused"], **rec}
    return rec


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), collapse=one_refusal, kv_specs=True)


if __name__ == "__main__":
    main()
