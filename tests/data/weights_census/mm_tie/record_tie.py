# ruff: noqa
"""Record what vLLM 0.33 builds for a multimodal wrapper's LM head, tied or not, when the
wrapper's ``tie_word_embeddings`` and its text config's disagree or either is missing
(-> answers.json): for each multimodal class kvcli reads, its KV-spec census config
(../../kv_spec_census/answers.json: the config class's defaults) or a published config of the
remote-code classes (../mm_minicpm_idefics_phi, ../internvl_chat), under each VARIANTS pair
(wrapper, text: true, false, or None for the key removed), built at TP 1 and 2 every rank.

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_tie/record_tie.py [ARCH ...]

It executes ../mm_minicpm_idefics_phi/record_towers.py's module (its remote-code config
classes registered; through it ../../kv_spec_census/record_kv_specs.py's substitutions and
InternVLChatModel's config class), whose `rc.record` builds each case.
"""
import copy, importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_towers", HERE.parent / "mm_minicpm_idefics_phi" / "record_towers.py")
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)                    # vLLM imported, every substitution applied
rc = rt.rc

TPS = (1, 2)
# (wrapper's tie_word_embeddings, text config's): None removes the key, so the config class's
# default (or none at all) is what vLLM sees
VARIANTS = ((True, False), (False, True), (None, True), (None, False), (True, None),
            (False, None))
# the remote-code classes' published configs (their census rows were skipped: no config class),
# and published configs beside a class's census config
PUBLISHED = {"MiniCPMV": "mm_minicpm_idefics_phi/minicpm-v-2_6",
          "Phi3VForCausalLM": "mm_minicpm_idefics_phi/phi-3.5-vision-instruct",
          "Phi4MMForCausalLM": "mm_minicpm_idefics_phi/phi-4-multimodal-instruct",
          "smolvlm-256m-instruct": "mm_minicpm_idefics_phi/smolvlm-256m-instruct",
          "idefics3-8b-llama3": "mm_minicpm_idefics_phi/idefics3-8b-llama3"}
CENSUS = HERE.parents[1] / "kv_spec_census" / "answers.json"


def base_configs(names):
    rows = json.loads(CENSUS.read_text())["architectures"]
    out = {a: json.loads((HERE.parent / f"{p}.config.json").read_text())
           for a, p in PUBLISHED.items()}
    for a in names:
        if a not in out:
            out[a] = rows[a]["config"]
    return out


def variant(cfg, wrapper, text):
    cfg = copy.deepcopy(cfg)
    inner = cfg.get("text_config") if "text_config" in cfg else cfg.get("llm_config")
    for d, v in ((cfg, wrapper), (inner, text)):
        if d is None:
            continue
        d.pop("tie_word_embeddings", None)
        if v is not None:
            d["tie_word_embeddings"] = v
    return cfg


def main():
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__,
                "cases": {}})
    answers["substitutions"] = rt.rks.SUBSTITUTIONS
    for arch, cfg in base_configs(sys.argv[1:]).items():
        if sys.argv[1:] and arch not in sys.argv[1:]:
            continue
        flat = not isinstance(cfg.get("text_config", cfg.get("llm_config")), dict)
        for w, t in VARIANTS:
            if flat and t is not None:
                continue
            name = f"{arch} wrapper={w} text={t}"
            c = variant(cfg, w, t)
            try:
                answers["cases"][name] = {"config": c, **rc.record(name, c, TPS)}
            except Exception as e:           # the config refused before any build
                answers["cases"][name] = {"config": c, "refused": f"{type(e).__name__}: {e}"[:600]}
                print(name, "refused", e, file=sys.stderr, flush=True)
            answers["cases"] = dict(sorted(answers["cases"].items()))
            path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
