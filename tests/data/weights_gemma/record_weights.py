# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's weights for Gemma 3n's and Gemma 4's text models, rank by
rank at TP 1, 2, 4 and 8 (-> answers.json), for tests/test_gemma_weights.py.

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $ORACLE_HOME/venv/bin/python tests/data/weights_gemma/record_weights.py

(ORACLE_HOME=~/.cache/vllm-oracle; from the project root.) The configs are
../sched_gemma/planning.json's (the config classes' defaults and variants, the small configs);
each is recorded by ../weights_census/record_census.py's `record` (vLLM's class built by
`initialize_model` on the meta device, every rank: parameters, bytes by dtype, buffers, rank 0's
parameters by name), with that census's substitutions and the KV-spec census's.
"""

import importlib.util, json
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (through the KV-spec census's recorder: its substitutions too, Gemma 3n's sparse GELU
# threshold computed on the CPU among them)
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parent / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)
rc = rks.rc


def main():
    rc.rqn.rmm_main_env()
    rows = json.loads((HERE.parent / "sched_gemma" / "planning.json").read_text())
    out = {"substitutions": rc.SUBSTITUTIONS,
           "cases": {name: {"config": row["config"], **rc.record(name, row["config"], rc.TPS)}
                     for name, row in rows.items()}}
    (HERE / "answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
