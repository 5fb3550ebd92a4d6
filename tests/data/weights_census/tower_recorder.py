"""The tower censuses' recorders' shared part (llava_towers, glm_kimi_towers, internvl_chat,
llama4_moe, mm_minicpm_idefics_phi, mm_omni and its deepseek_vl2, mm_ernie, mm_nemo, mm_step3,
mm_audio: each folder's recorder names its configs' serving options and calls `record_towers`).

Importing it executes ../kv_spec_census/record_kv_specs.py (`rks`) for its substitutions, and
through it record_census.py (`rc`), whose `record` builds each case: vLLM imported, every
substitution applied. A development tool, never run by the tests.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", _HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, every substitution applied
rc = rks.rc

# the serving options most cases are recorded with beside their plain build: the tower dropped,
# and the encoder's data-parallel mode
LMO = ("--language-model-only", True)
DATA = ("--mm-encoder-tp-mode", "data")


def case_name(base, flag, value):
    """A case's name: its config's, then the option as a command line spells it."""
    if value is True:
        return f"{base} {flag}"
    v = json.dumps(value, separators=(",", ":")) if isinstance(value, dict) else value
    return f"{base} {flag} {v}"


def cases(here, options, every=()):
    """name -> (config base, vLLM's multimodal kwargs or None): every ``*.config.json`` of
    `here` plainly, then under each of its `options` (`every` for a config not listed)."""
    out = {}
    for p in sorted(here.glob("*.config.json")):
        base = p.name[: -len(".config.json")]
        out[base] = (base, None)
        for flag, value in options.get(base, every):
            out[case_name(base, flag, value)] = (base, rc.mm_kwargs(flag, value))
    return out


def kv_row(cfg):
    """The KV-spec census's row for the config (record_kv_specs.build at TP 1)."""
    try:
        return {"config": cfg, **rks.build(cfg["architectures"][0], cfg)}
    except Exception as e:
        return {"config": cfg, "skipped": f"{type(e).__name__}: {e}"[:500]}


def record_towers(here, tps, todo, substitutions=(), collapse=None, kv_specs=False):
    """Record the cases `todo` (`cases`) named on the command line (all without) at `tps` into
    `here`/answers.json, written after each: a case refused before any build as its error;
    `collapse` rewrites a built record (a case refused alike at every TP, say); `kv_specs`
    records each config's KV-spec row beside its plain case."""
    rc.rqn.rmm_main_env()
    path = here / "answers.json"
    fresh = {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}}
    answers = json.loads(path.read_text()) if path.exists() else {
        **fresh, **({"kv_specs": {}} if kv_specs else {})}
    answers["substitutions"] = rks.SUBSTITUTIONS + list(substitutions)
    for name in sys.argv[1:] or list(todo):
        base, mm = todo[name]
        cfg = json.loads((here / f"{base}.config.json").read_text())
        try:
            rec = rc.record(name, cfg, tps, mm)
            answers["cases"][name] = collapse(rec) if collapse else rec
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        if kv_specs and mm is None:
            answers["kv_specs"][base] = kv_row(cfg)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        if kv_specs:
            answers["kv_specs"] = dict(sorted(answers["kv_specs"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")
