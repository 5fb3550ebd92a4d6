# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft (method "mtp") of ERNIE-4.5 (ErnieMTP) and
Step-3.5 (Step3p5MTP): the draft's class, its KV cache specs and the groups with the target's
(-> specs_answers.json), for tests/test_drafts2.py. ../mtp3/record_mtp3_specs.py's way exactly:

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/weights_census/drafts2/record_drafts2_specs.py

../../mtp_draft/record_mtp_models.py's `build` (imported: the V2 runner's MTP load path on the
meta device, its substitutions listed in the output, num_speculative_tokens 1; FLASH_ATTN
for its TRITON_MLA, the hybrid KV cache manager on as on a GPU) over the
configs of ../mm_ernie/ and ../mm_step3/step3p5/ (and `step3p5-hub-1mtp`: the hub config with
one MTP layer, written by `configs.py` beside this file).
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_mtp_models", HERE.parents[1] / "mtp_draft" / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)
_c = importlib.util.spec_from_file_location("configs", HERE / "configs.py")
configs = importlib.util.module_from_spec(_c)
_c.loader.exec_module(configs)
# (neither target has MLA: FLASH_ATTN, an H100's backend, for the record's TRITON_MLA)
rmm.BACKEND = rmm.AttentionBackendEnum.FLASH_ATTN
rmm.current_platform.get_attn_backend_cls = lambda *a, **k: rmm.BACKEND.get_path()
# (the CPU platform turns the hybrid KV cache manager off, so a hybrid target's layers would
# fall in one group; a GPU's keeps it on: Step-3.5's full and sliding layers)
rmm.current_platform.support_hybrid_kv_cache = lambda: True
_groups = rmm.get_global_kv_cache_groups


def _resolved_groups(vc, specs_list):
    """The groups after the engine core resolves one KV cache layout (v1/engine/core.py), as
    ../../mtp_draft/record_qwen3_next_mtp.py resolves it (hybrid groups need it)."""
    from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
    from vllm.v1.attention.backends.utils import (get_supported_kv_cache_layouts,
                                                  resolve_kv_cache_layout)
    supported = [m.name for m in get_supported_kv_cache_layouts(get_current_attn_backends(vc))]
    resolve_kv_cache_layout(vc, [supported], specs_list[0].values())
    return _groups(vc, specs_list)


rmm.get_global_kv_cache_groups = _resolved_groups
SUBSTITUTIONS = [s for s in rmm.SUBSTITUTIONS if "TRITON_MLA" not in s] + [
    "attention backend: FLASH_ATTN (the record's TRITON_MLA replaced: no MLA here)",
    "support_hybrid_kv_cache(): true, as a GPU answers (the hybrid KV cache manager on)"]


def _dir(case):
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(json.dumps(configs.config(case)))
    return d


rmm.preset_config = _dir


def main():
    rmm.HERE = Path(tempfile.mkdtemp())     # (its answers.json written there, not kept)
    sys.argv[1:] = sys.argv[1:] or list(configs.CASES)
    rmm.main()
    out = json.loads((rmm.HERE / "answers.json").read_text())
    out["substitutions"] = SUBSTITUTIONS
    (HERE / "specs_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
