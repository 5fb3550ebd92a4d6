"""Record what vLLM 0.33 builds, rank by rank, for the configs here (written by
make_longcat_cases.py: LongCat-Flash) -> answers.json: every rank at TP 1, 2, 4 and 8 by
../record_census.py's `record` (its substitutions), the experts and layers vLLM's ModelConfig
reads (`get_num_experts()`, `get_total_num_hidden_layers()`), or vLLM's refusal.

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/longcat/record_longcat.py
"""
# ruff: noqa
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_census", HERE.parent / "record_census.py")
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)


def num_experts(cfg):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "config.json").write_text(json.dumps(cfg))
    mc = rc.ModelConfig(model=str(tmp), skip_tokenizer_init=True, seed=0, max_model_len=4096)
    return mc.get_num_experts(), mc.get_total_num_hidden_layers()


def main():
    rc.rqn.rmm_main_env()
    answers = {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__,
               "substitutions": rc.SUBSTITUTIONS, "cases": {}}
    for p in sorted(HERE.glob("*.config.json")):
        cfg = json.loads(p.read_text())
        key = f"weights_census/longcat/{p.name}"
        try:
            n, layers = num_experts(cfg)
            answers["cases"][key] = {"get_num_experts": n, "total_num_hidden_layers": layers,
                                     **rc.record(key, cfg, (1, 2, 4, 8))}
        except Exception as e:           # the config refused before any build
            answers["cases"][key] = {"refused": f"{type(e).__name__}: {e}"[:600]}
    (HERE / "answers.json").write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
