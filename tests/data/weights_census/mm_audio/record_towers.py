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

It executes ../../kv_spec_census/record_kv_specs.py first for its substitutions (and through
it ../record_census.py's, whose `record` builds each case); every one is listed in answers.json.
MiniCPM-o's and Intern-S1-Pro's checkpoints bring their config classes as remote code: this
folder's minicpmo_config.py and interns1_pro_config.py, registered with AutoConfig by
record_kv_specs.py (README.md); Voxtral's mel filter bank: mistral_common's own (below).
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parents[1] / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, every substitution applied
rc = rks.rc

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
LMO = ("--language-model-only", True)
DATA = ("--mm-encoder-tp-mode", "data")
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


def case_name(base, flag, value):
    if value is True:
        return f"{base} {flag}"
    v = json.dumps(value, separators=(",", ":")) if isinstance(value, dict) else value
    return f"{base} {flag} {v}"


def cases():
    out = {}
    for p in sorted(HERE.glob("*.config.json")):
        base = p.name[: -len(".config.json")]
        out[base] = (base, None)
        for flag, value in OPTIONS.get(base, ()):
            out[case_name(base, flag, value)] = (base, rc.mm_kwargs(flag, value))
    return out


def kv_row(cfg):
    """The KV-spec census's row for the config (record_kv_specs.build at TP 1)."""
    try:
        return {"config": cfg, **rks.build(cfg["architectures"][0], cfg)}
    except Exception as e:
        return {"config": cfg, "skipped": f"{type(e).__name__}: {e}"[:500]}


def main():
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__,
                "cases": {}, "kv_specs": {}})
    answers["substitutions"] = rks.SUBSTITUTIONS
    todo = cases()
    for name in sys.argv[1:] or list(todo):
        base, mm = todo[name]
        cfg = json.loads((HERE / f"{base}.config.json").read_text())
        try:
            rec = rc.record(name, cfg, TPS, mm)
            if all("refused" in ranks[0] for ranks in rec["tp"].values()):
                # (refused at every TP, as vLLM refuses Voxtral's HF config: a refused case)
                rec = {"refused": rec["tp"]["1"][0]["refused"], **rec}
            answers["cases"][name] = rec
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        if mm is None:
            answers["kv_specs"][base] = kv_row(cfg)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        answers["kv_specs"] = dict(sorted(answers["kv_specs"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
