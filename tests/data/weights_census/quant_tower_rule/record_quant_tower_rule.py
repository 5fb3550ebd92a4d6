# ruff: noqa
"""Record what vLLM 0.33 builds at TP 1 and 2, every rank, for this folder's configs
(make_cases.py): parameter count, bytes by dtype, buffers, rank 0's parameters by name, or the
refusal vLLM raised (-> answers.json). A development tool, never run by the tests. From the
project root:

    ulimit -v 16000000; export HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision\\
:/tmp/ct_pkgs
    R=tests/data/weights_census/quant_tower_rule/record_quant_tower_rule.py
    PY=~/.cache/vllm-oracle/venv/bin/python
    C="$(cd ${R%/*} && ls *.config.json | sed 's/.config.json//')"
    flock /tmp/vllm-build.lock nice -n 10 timeout 3000 $PY $R $C

It executes ../quant_towers/record_quant_towers.py (its substitutions: the KV-spec census's,
../int_quant's H100 platform, ../modelopt's when a case named holds "modelopt").
"""
import importlib.util, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_quant_towers", HERE.parent / "quant_towers" / "record_quant_towers.py")
rqt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rqt)
rqt.TPS = (1, 2)

if __name__ == "__main__":
    rqt.record_names(HERE, sys.argv[1:] or rqt.configs(HERE))
