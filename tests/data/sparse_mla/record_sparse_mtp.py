# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft (method "mtp") of the sparse MLA models, its
parameters, its KV cache specs and the groups with the target's (-> mtp_answers.json), for
tests/test_sparse_mla_mtp.py.

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/sparse_mla/record_sparse_mtp.py

../mtp_draft/record_mtp_models.py's `build` (imported: the V2 runner's MTP load path on the
meta device, its substitutions listed in mtp_answers.json) over this folder's configs, with:
the sparse backend an H100 picks (FLASH_ATTN_MLA_SPARSE, bf16 cache), the block size
`Platform.update_block_size_for_backend` gives it (64) set before the specs are collected, and
the platform's device_type meta (the MTP layer's top-k indices buffer is made there).
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_mtp_models", HERE.parent / "mtp_draft" / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)

from vllm.platforms import current_platform
from vllm.platforms.interface import Platform
from vllm.v1.attention.backends import flash_attn  # noqa: F401  (as ../weights_census's: the
# FlashAttention backend imported first, so the sparse one's import of vllm_flash_attn resolves)
from vllm.v1.attention.backends.registry import AttentionBackendEnum

BACKEND = AttentionBackendEnum.FLASH_ATTN_MLA_SPARSE
current_platform.get_attn_backend_cls = lambda *a, **k: BACKEND.get_path()
rmm.BACKEND = BACKEND
current_platform.device_type = "meta"
_collect = rmm.attn_utils.get_kv_cache_spec


def _collect_at_backend_block(vc):
    Platform.update_block_size_for_backend(vc)
    return _collect(vc)


rmm.attn_utils.get_kv_cache_spec = _collect_at_backend_block
SUBSTITUTIONS = [s for s in rmm.SUBSTITUTIONS if "TRITON_MLA" not in s] + [
    "attention backend: FLASH_ATTN_MLA_SPARSE (an H100's first sparse MLA backend with a bf16 "
    "cache), block size from Platform.update_block_size_for_backend before the specs",
    "platform device_type: meta (the top-k indices buffers are made there)"]
CASES = {"deepseek-v3.2": HERE / "deepseek-v3.2.config.json",
         "glm-5": HERE / "glm-5.config.json",
         "deepseek-v3.2-tiny": HERE.parent / "sched_sparse_mla" / "deepseek-v3.2-tiny.json",
         # (IndexCache: the MTP layer keeps its indexer whatever the target's layers skip)
         "deepseek-v3.2-index-freq": HERE / "deepseek-v3.2-index-freq.config.json",
         "glm-5-index-pattern": HERE / "glm-5-index-pattern.config.json"}


def _dir(case):
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(CASES[case].read_text())
    return d


rmm.preset_config = _dir


def main():
    rmm.HERE = Path(tempfile.mkdtemp())     # (its answers.json written there, not kept)
    sys.argv[1:] = list(CASES)
    rmm.main()
    out = json.loads((rmm.HERE / "answers.json").read_text())
    out["substitutions"] = SUBSTITUTIONS
    (HERE / "mtp_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
