# ruff: noqa
"""Dev tool (not a test): ../record_drafts.py (imported, run as it runs) over the multi-module
MTP targets of configs.py beside this file, each written once as a model folder
../drafts/<case>/ (-> ../drafts_answers.json, cases `drafts/<case>`). The sparse MLA targets
(DeepSeek-V3.2, GLM-5) on the backend an H100 picks for them, FLASH_ATTN_MLA_SPARSE (as
../../sparse_mla/record_sparse_mtp.py), the platform's device_type meta (their MTP layers' top-k
index buffers are made there):

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision \\
        nice -n 19 timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/mtpmulti2/record_mtpmulti2.py [--all-ranks] [CASE ...]
"""
import importlib.util, sys
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
_c = importlib.util.spec_from_file_location("configs", HERE / "configs.py")
configs = importlib.util.module_from_spec(_c)
_c.loader.exec_module(configs)
_r = importlib.util.spec_from_file_location("record_drafts", HERE.parent / "record_drafts.py")
rd = importlib.util.module_from_spec(_r)
_r.loader.exec_module(rd)

from vllm.platforms import current_platform
from vllm.v1.attention.backends import flash_attn  # noqa: F401  (imported before the sparse one)
from vllm.v1.attention.backends.registry import AttentionBackendEnum

current_platform.device_type = "meta"
rd.SUBSTITUTIONS.append("platform device_type: meta (MTP layers' top-k buffers are made there)")
rd.SUBSTITUTIONS.append("backend: FLASH_ATTN_MLA_SPARSE for sparse MLA (an H100's, bf16 cache)")
_build = rd.build


def _build_on(case):
    sparse = case in configs.SPARSE

    def build(target, method, draft, tp, rank):
        rd.AttentionBackendEnum = SimpleNamespace(
            TRITON_MLA=(AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE if sparse
                        else AttentionBackendEnum.TRITON_MLA),
            FLASH_ATTN=AttentionBackendEnum.FLASH_ATTN)
        return _build(target, method, draft, tp, rank)
    return build


for case in configs.CASES:
    def _case(c=case):
        rd.build = _build_on(c)
        return rd._written(c, configs.config(c)), "mtp", None
    rd.CASES[f"drafts/{case}"] = _case

if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if a != "--all-ranks"] or list(configs.CASES)
    sys.argv[1:] = [f"drafts/{n}" for n in names] + (
        ["--all-ranks"] if "--all-ranks" in sys.argv else [])
    rd.main()
