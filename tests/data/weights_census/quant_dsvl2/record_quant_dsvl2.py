"""Record what vLLM 0.33 builds, rank by rank, for DeepSeek-VL2 under the quantisation methods
(the configs here, make_cases.py): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8,
every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), or the
refusal vLLM raised (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision\\
:/tmp/ct_pkgs:/tmp/timm_pkg \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/quant_dsvl2/record_quant_dsvl2.py [CASE ...]

It executes ../quant_towers/record_quant_towers.py (its substitutions: the KV-spec census's,
with DeepSeek-VL2's tokenizer stand-in, ../int_quant's H100 platform, ../modelopt's when a case
named holds "modelopt") and adds one: timm's so400m SigLIP, which vLLM builds on the CPU and
moves to the meta device (20-30 s a rank here), is built once and each build gets a deep copy
of that meta-device model (the same modules, parameters and dtypes; vLLM then swaps its MLP
linears and casts it, as ever).
"""
# ruff: noqa
import copy, importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_quant_towers", HERE.parent / "quant_towers" / "record_quant_towers.py")
rqt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rqt)
rc, rks = rqt.rc, rqt.rks

import timm
_create_model = timm.create_model
_built = {}


def _create_once(name, **kw):
    key = (name, json.dumps(kw, sort_keys=True), rc.torch.get_default_dtype())
    if key not in _built:
        _built[key] = _create_model(name, **kw).to("meta")
    return copy.deepcopy(_built[key])


timm.create_model = _create_once
SUBSTITUTION = ("timm.create_model: built once (on the CPU, as vLLM builds it), moved to the "
                "meta device, and a deep copy given to each build (the same modules and dtypes)")

TPS = (1, 2, 4, 8)


def main():
    names = sys.argv[1:] or rqt.configs(HERE)
    rqt.record_names(HERE, names, [SUBSTITUTION])


if __name__ == "__main__":
    main()
