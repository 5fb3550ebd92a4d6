"""Record vLLM 0.33's KV cache specs at TP 1 for the Step-3.5 configs named (-> kv_answers.json):
`Step3p5ForCausalLM` built by ../../../kv_spec_census/record_kv_specs.py's `build` (its
substitutions applied), the specs collected as the GPU runner collects them.

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 900 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_step3/step3p5/record_kv.py step3p5-hub step3p5-swa
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parents[2] / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)
rks.rc.rqn.rmm_main_env()
out = {}
for base in sys.argv[1:]:
    cfg = json.loads((HERE / f"{base}.config.json").read_text())
    out[base] = {"config": cfg, **rks.build("Step3p5ForCausalLM", cfg)}
(HERE / "kv_answers.json").write_text(json.dumps(out, indent=1) + "\n")
