# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft (method "mtp") of DeepSeek-V3.2 and GLM-5 under
their published fp8 (this folder's deepseek-v3.2-fp8-block / glm-5-fp8-block configs), its
parameters (-> mtp_answers.json), as ../../sparse_mla/record_sparse_mtp.py records the bf16
ones (imported: its sparse backend, block size and device substitutions; and no fp8 GEMM
kernel chosen, as ../record_census.py), for
tests/test_quant2_census.py. From the project root:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/weights_census/quant2/record_quant2_mtp.py
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_sparse_mtp", HERE.parents[1] / "sparse_mla" / "record_sparse_mtp.py")
rsm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rsm)
rmm = rsm.rmm
# (as ../record_census.py: the fp8 linear method picks its GEMM kernel per platform after
# create_weights; the CPU's has none without vllm._C, and a kernel holds no tensor here)
from vllm.model_executor.layers.quantization import fp8
fp8.init_fp8_linear_kernel = lambda **kw: None
rsm.SUBSTITUTIONS.append("fp8 linear: no GEMM kernel chosen (after create_weights; holds no "
                         "tensor)")

rsm.CASES.clear()
rsm.CASES.update({n: HERE / f"{n}.config.json"
                  for n in ("deepseek-v3.2-fp8-block", "glm-5-fp8-block")})


def main():
    rmm.HERE = Path(tempfile.mkdtemp())     # (its answers.json written there, not kept)
    sys.argv[1:] = list(rsm.CASES)
    rmm.main()
    out = json.loads((rmm.HERE / "answers.json").read_text())
    out["substitutions"] = rsm.SUBSTITUTIONS
    (HERE / "mtp_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
