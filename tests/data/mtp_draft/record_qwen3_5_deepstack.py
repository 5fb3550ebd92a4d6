# ruff: noqa
"""Record vLLM 0.33's parameters for a tiny Qwen3.5 multimodal config whose vision config lists
`deepstack_visual_indexes` (the mutation campaign, ../mutants/README.md: every other Qwen3.5
vision config here has none, so kvcli's count of the deepstack mergers was never checked)
-> qwen3_5_deepstack_answers.json. A development tool, never run by the tests; run as
record_qwen3_5.py is (its docstring), naming this file:

    ulimit -v 12000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        timeout 1800 \\
        ~/.cache/vllm-oracle/venv/bin/python tests/data/mtp_draft/record_qwen3_5_deepstack.py

It imports record_qwen3_5.py (its substitutions, tiny text config and `build0`, K = 0 only) and
writes the case's config once: 11-tiny-qwen3-5-vl's with `deepstack_visual_indexes` [0, 1].
"""
import importlib.util, json, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("record_qwen3_5", HERE / "record_qwen3_5.py")
r5 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(r5)

CASE = "17-tiny-qwen3-5-vl-deepstack"
r5.CONFIGS[CASE] = lambda: dict(
    r5._mm("Qwen3_5ForConditionalGeneration", "qwen3_5", r5.DENSE, torch_dtype="bfloat16"),
    vision_config=dict(r5.VISION, model_type="qwen3_5_vision", deepstack_visual_indexes=[0, 1]))


def main():
    r5.rq.rmm_main_env()
    out = HERE / "qwen3_5_deepstack_answers.json"
    answers = {"vllm_version": r5.vllm.__version__, "torch": r5.torch.__version__,
               "substitutions": r5.rq.SUBSTITUTIONS, "cases": {f"{CASE}/K=0": r5.build0(CASE)}}
    out.write_text(json.dumps(answers, indent=1) + "\n")
    print(answers["cases"][f"{CASE}/K=0"]["target"], file=sys.stderr)


if __name__ == "__main__":
    main()
