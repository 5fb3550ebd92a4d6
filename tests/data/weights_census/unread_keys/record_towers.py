# ruff: noqa
"""Record what vLLM 0.33 builds, rank by rank, for the configs of this folder (Laguna's SWA
sinks, Seed-OSS's o_proj bias, Apertus' XIELU in three dtypes): every ``*.config.json`` here at
TP 1, 2, 4 and 8, every rank (parameter count, bytes by dtype, buffers; rank 0's parameters by
name), and each config's KV cache specs at TP 1 as the KV-spec census records them
(-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        flock /tmp/vllm-build.lock timeout 1500 nice -n 10 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/unread_keys/record_towers.py [CASE ...]

It imports ../tower_recorder.py, which executes ../../kv_spec_census/record_kv_specs.py for its
substitutions; every one is listed in answers.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import tower_recorder as tr                     # vLLM imported, every substitution applied

TPS = (1, 2, 4, 8)
# (--dtype float32: the model dtype that tells parameters kept in the model dtype from those
# made in a fixed one, as `vllm serve --dtype float32` builds them)
FP32 = ("--dtype", "float32")
OPTIONS = {"tiny-apertus": (FP32,), "tiny-laguna-swa-sinks": (FP32,)}


def main():
    tr.record_towers(HERE, TPS, tr.cases(HERE, OPTIONS), kv_specs=True)


if __name__ == "__main__":
    main()
