"""Record what vLLM 0.33 builds, rank by rank, for openPangu Ultra MoE
(`PanguUltraMoEForCausalLM`, model_type pangu_ultra_moe: vLLM's openpangu.py): every
``*.config.json`` of this folder at TP 1, 2, 4 and 8, every rank (parameter count, bytes by
dtype, buffers; rank 0's parameters by name) -> answers.json.

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/openpangu/record_openpangu.py [CASE ...]

It executes ../../kv_spec_census/record_kv_specs.py first for its substitutions (and through
it ../record_census.py's, whose `record` builds each case), then registers a config class for
model_type pangu_ultra_moe: the checkpoints ship their own (remote code, not fetchable
offline; transformers 5.20 has none), and vLLM reads only the keys the config.json gives, so
the class here is a PretrainedConfig holding them as given.
"""
# ruff: noqa
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_kv_specs", HERE.parents[1] / "kv_spec_census" / "record_kv_specs.py")
rks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rks)                   # vLLM imported, every substitution applied
rc = rks.rc
from transformers import AutoConfig, PretrainedConfig


class PanguUltraMoEConfig(PretrainedConfig):
    """The keys as given; the positions set before PretrainedConfig's __init__, as a remote
    class's own __init__ sets its fields first (transformers' RoPE validation of a
    ``rope_scaling`` reads max_position_embeddings)."""
    model_type = "pangu_ultra_moe"

    def __init__(self, **kwargs):
        self.max_position_embeddings = kwargs.pop("max_position_embeddings", 4096)
        super().__init__(**kwargs)


AutoConfig.register("pangu_ultra_moe", PanguUltraMoEConfig, exist_ok=True)
SUBSTITUTIONS = ["model_type pangu_ultra_moe: a PretrainedConfig holding the config.json's "
                 "keys as given (the checkpoints' remote-code class, not fetchable offline)"]
TPS = (1, 2, 4, 8)


def main():
    rc.rqn.rmm_main_env()
    path = HERE / "answers.json"
    answers = (json.loads(path.read_text()) if path.exists() else
               {"vllm_version": rc.vllm.__version__, "torch": rc.torch.__version__, "cases": {}})
    answers["substitutions"] = rks.SUBSTITUTIONS + SUBSTITUTIONS
    todo = sorted(p.name[: -len(".config.json")] for p in HERE.glob("*.config.json"))
    for name in sys.argv[1:] or todo:
        cfg = json.loads((HERE / f"{name}.config.json").read_text())
        try:
            answers["cases"][name] = rc.record(name, cfg, TPS)
        except Exception as e:           # the config refused before any build
            answers["cases"][name] = {"refused": f"{type(e).__name__}: {e}"[:600]}
            print(name, "refused", e, file=sys.stderr, flush=True)
        answers["cases"] = dict(sorted(answers["cases"].items()))
        path.write_text(json.dumps(answers, indent=1) + "\n")


if __name__ == "__main__":
    main()
