"""Record what vLLM 0.33 builds, rank by rank, for Molmo under the
quantisation methods (the configs here, make_cases.py): every ``*.config.json`` of this
folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's
parameters by name), or the refusal vLLM raised (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision\\
:/tmp/ct_pkgs \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/quant_molmo/record_quant_molmo.py [CASE ...]

It executes ../quant_towers/record_quant_towers.py (its substitutions: the KV-spec census's,
../int_quant's H100 platform, ../modelopt's when a case
named holds "modelopt"; Molmo's remote config class, ../mm_nemo/molmo_config.py, registered by
the KV-spec census's).
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_quant_towers", HERE.parent / "quant_towers" / "record_quant_towers.py")
rqt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rqt)
rc, rks = rqt.rc, rqt.rks

TPS = (1, 2, 4, 8)


def main():
    names = sys.argv[1:] or rqt.configs(HERE)
    rqt.record_names(HERE, names)


if __name__ == "__main__":
    main()
