"""Record what vLLM 0.33 builds, rank by rank, for DeepSeek-VL2 (tiny, small, full; the configs
here): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter
count, bytes by dtype, buffers; rank 0's parameters by name), and
each under the multimodal serving options of OPTIONS (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision\\
:/tmp/timm_pkg \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_omni/deepseek_vl2/record_towers.py [CASE ...]

It executes ../../../kv_spec_census/record_kv_specs.py first for its substitutions (and
through it ../../record_census.py's, whose `record` builds each case); every one is listed in
answers.json, with this file's own SUBSTITUTION.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parents[2] / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, every substitution applied
rc = rks.rc

TPS = (1, 2, 4, 8)
# (option, value) pairs each base is recorded with beside its plain build: the tower dropped
# (--language-model-only, an image limit of 0) and the encoder's data-parallel mode (which the
# class does not declare: vLLM falls back)
LMO = ("--language-model-only", True)
DATA = ("--mm-encoder-tp-mode", "data")
OPTIONS = {"deepseek-vl2-tiny": (LMO, ("--limit-mm-per-prompt", {"image": 0}), DATA),
           "deepseek-vl2-small": (LMO,), "deepseek-vl2": (LMO,)}

# DeepseekVLV2ForCausalLM looks its image token's id up in the tokenizer as it is built
# (deepseek_vl2.py: `cached_tokenizer_from_config(model_config).vocab[_IMAGE_TOKEN]`); no
# tokenizer files here: a stand-in whose vocab holds that token. An int, no tensor.
import types
from vllm.model_executor.models import deepseek_vl2 as _dsvl2
_dsvl2.cached_tokenizer_from_config = lambda mc: types.SimpleNamespace(
    vocab={_dsvl2._IMAGE_TOKEN: 128815})
SUBSTITUTION = ("DeepSeek-VL2: cached_tokenizer_from_config a stand-in whose vocab holds "
                "<image> (the image token id only; no tensor)")


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
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}})
    answers["substitutions"] = rks.SUBSTITUTIONS + [SUBSTITUTION]
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
