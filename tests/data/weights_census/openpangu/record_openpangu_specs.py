"""Record vLLM 0.33's per-layer KV cache specs for this folder's openPangu configs (the tiny
one and the 718B's shapes) as the KV-spec census records a row (-> kv_specs.json): its
`build` (../../kv_spec_census/record_kv_specs.py, executed first with every substitution),
the remote config class registered as record_openpangu.py registers it. The census itself
builds a config from a config class's defaults, which this class has none of. From the
project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 600 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/openpangu/record_openpangu_specs.py
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.argv = sys.argv[:1]
_spec = importlib.util.spec_from_file_location("record_openpangu", HERE / "record_openpangu.py")
rop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rop)          # the census's substitutions, the config class
rks = rop.rks
CASES = ("tiny-pangu-ultra-moe", "openpangu-ultra-moe-718b")


def main():
    rks.rc.rqn.rmm_main_env()
    rows = {}
    for name in CASES:
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        rows[name] = {"config": cfg, **rks.build("PanguUltraMoEForCausalLM", cfg)}
    (HERE / "kv_specs.json").write_text(json.dumps(
        {"vllm_version": rks.rc.vllm.__version__, "substitutions": rks.SUBSTITUTIONS
         + rop.SUBSTITUTIONS, "rows": rows}, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
