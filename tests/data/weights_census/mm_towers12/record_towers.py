"""Record what vLLM 0.33 builds, rank by rank, for the classes of towers1 (the configs here):
every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes
by dtype, buffers; rank 0's parameters by name), and each under the multimodal serving options
of OPTIONS (-> answers.json).

Pixtral's Mistral-format cases (a ``<base>.params.json`` beside the config): vLLM reads the
params.json (``--config-format mistral``, as it serves those checkpoints), not the config.json
kvcli reads; the config.json is kept out of the model folder (vLLM would take its keys as
defaults).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 nice -n 19 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mm_towers12/record_towers.py [CASE ...]
"""
# ruff: noqa
import json, shutil, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied
rks, rc = tr.rks, tr.rc

TPS = (1, 2, 4, 8)
LMO, DATA = tr.LMO, tr.DATA
NO_IMAGE = ("--limit-mm-per-prompt", {"image": 0})
EVERY = (LMO, NO_IMAGE, DATA)
OPTIONS = {"tiny-pixtral-plain": (), "tiny-pixtral-missing": ()}

_current = {"base": ""}
_record, _model_config = rc.record, rc.ModelConfig


def record(name, cfg, tps, mm=None):
    _current["base"] = name.split(" ")[0]
    return _record(name, cfg, tps, mm)


def model_config(model, **kw):
    """A Mistral-format case: its params.json alone in the model folder, read as vLLM reads it."""
    params = HERE / f"{_current['base']}.params.json"
    if params.exists():
        (Path(model) / "config.json").unlink()
        shutil.copy(params, Path(model) / "params.json")
        kw["config_format"] = "mistral"
    return _model_config(model=model, **kw)


rc.record, rc.ModelConfig = record, model_config
SUBSTITUTIONS = ["Mistral-format cases (a <base>.params.json here): the model folder holds the "
                 "params.json alone, ModelConfig given config_format='mistral'"]


def one_refusal(case):
    """A case refused alike at every TP, as the class is built: one refusal for the case."""
    words = {r[0].get("refused") for r in case["tp"].values()}
    return {"refused": words.pop()} if len(words) == 1 and None not in words else case


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS, EVERY), SUBSTITUTIONS, one_refusal)


if __name__ == "__main__":
    main()
