# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's planning of the two var configs (answers.json records
their weights only) on 1 GiB -> layouts.json: var has a C4 layer (its indexer's backend
declares the block-outermost layout), var2 none (vLLM's default layout, layer-outer, whose
page unification refuses its MLA pages). From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock nice -n 19 $R/venv/bin/python \\
        tests/data/deepseek_v4/record_layouts.py

record_dsv4.py's build and `planning` (the engine core's road), an exception vLLM raises on
the way kept as `refused`.
"""
import json, sys, textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import dsv4_build as b
import record_dsv4 as r

CONFIGS = ("tiny-dsv4-var", "tiny-dsv4-var2")


def main():
    b.rc.rqn.rmm_main_env()
    b.install()
    out = {"substitutions": b.SUBSTITUTIONS, "cases": {}}
    for name in CONFIGS:
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        model, vc, specs = b.build(b.model_config(cfg, 4096))
        try:
            plan = r.planning(vc, specs, 1 << 30)
        except Exception as e:       # (vLLM's own refusal, before the memory is looked at)
            plan = {"available": 1 << 30,      # (wrapped at 90, as record_dsv4.py wraps it)
                    "refused": textwrap.wrap(f"{type(e).__name__}: {e}", 90)}
        out["cases"][name] = {"max_model_len": 4096, "planning": plan}
    (HERE / "layouts.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
