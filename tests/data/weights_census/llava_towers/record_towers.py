"""Record what vLLM 0.33 builds, rank by rank, for the multimodal configs here (Llama 4,
Mistral 3, the LLaVA family, PaliGemma, InternVL): every ``*.config.json`` of this folder at
TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters
by name), and each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/llava_towers/record_towers.py [CASE ...]

It executes ../../kv_spec_census/record_kv_specs.py first for its substitutions (and through
it ../record_census.py's, whose `record` builds each case): mistral_common's import-only
placeholder (llava.py, mistral3.py, pixtral.py import it), QuickGELU without vLLM's compiled
kernel (CLIP's activation), the registry's inspection in this process; every one is listed in
answers.json. The AWQ cases (``-awq`` in the name, recorded in a run of their own) add
../int_quant/record_int_quant.py's (an H100's platform, no kernel chosen).
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

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, and a limit of 0 for each of its modalities), and the encoder's
# data-parallel mode where the class supports it (otherwise vLLM falls back to weights)
LMO = ("--language-model-only", True)
DATA = ("--mm-encoder-tp-mode", "data")
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


def main():
    if any("-awq" in n for n in sys.argv[1:]):
        # AWQ checkpoints as an H100 builds them: ../int_quant/record_int_quant.py's platform
        # (CUDA capability 9.0) and its kernel substitutions, applied before these builds
        _q = importlib.util.spec_from_file_location(
            "record_int_quant", HERE.parent / "int_quant" / "record_int_quant.py")
        riq = importlib.util.module_from_spec(_q)
        _q.loader.exec_module(riq)
        rks.SUBSTITUTIONS += [s for s in riq.SUBSTITUTIONS if s not in rks.SUBSTITUTIONS]
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}})
    answers["substitutions"] = rks.SUBSTITUTIONS
    todo = cases()
    for name in sys.argv[1:] or list(todo):
        base, mm = todo[name]
        cfg = json.loads((HERE / f"{base}.config.json").read_text())
        try:
            answers["cases"][name] = rc.record(name, cfg, TPS, mm)
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
