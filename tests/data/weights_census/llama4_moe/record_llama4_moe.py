"""Record what vLLM 0.33 builds, rank by rank, for the Llama 4 configs here (Maverick's
interleaved dense and MoE layers, and tiny variants of interleave_moe_layer_step): every
``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank, with its vision tower and
under --language-model-only (-> answers.json); with ``--kv``, each config's per-layer KV cache
specs at TP 1 as ../../kv_spec_census/record_kv_specs.py's `build` collects them (-> kv_specs.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/llama4_moe/record_llama4_moe.py [--kv | CASE ...]

It executes ../llava_towers/record_towers.py (and through it its substitutions, listed in
answers.json) and builds each case with the same `record`.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_towers", HERE.parent / "llava_towers" / "record_towers.py")
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)                    # vLLM imported, every substitution applied
rc = rt.rc
tr = rt.tr


def kv_specs():
    out = {"vllm_version": rc.vllm.__version__, "configs": {}}
    for p in sorted(HERE.glob("*.config.json")):
        cfg = json.loads(p.read_text())
        out["configs"][p.name[: -len(".config.json")]] = rt.rks.build(cfg["architectures"][0], cfg)
    (HERE / "kv_specs.json").write_text(json.dumps(out, indent=1) + "\n")


def main():
    if sys.argv[1:] == ["--kv"]:
        rc.rqn.rmm_main_env()
        return kv_specs()
    tr.record_towers(HERE, rt.TPS, tr.cases(HERE, {}, every=(tr.LMO,)))


if __name__ == "__main__":
    main()
