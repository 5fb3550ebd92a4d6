# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft (method "mtp") of LongCat-Flash and openPangu
Ultra MoE: the draft's class, its KV cache specs and the groups with the target's
(-> specs_answers.json), for tests/test_mtp3.py.

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/weights_census/mtp3/record_mtp3_specs.py

../../mtp_draft/record_mtp_models.py's `build` (imported: the V2 runner's MTP load path on the
meta device, TRITON_MLA for an H100's FLASH_ATTN_MLA, its substitutions listed in the output)
over ../longcat/ and ../openpangu/ configs, with openPangu's config class registered as
../openpangu/pangu_config.py registers it (a PretrainedConfig holding the keys as given).
A config without num_nextn_predict_layers (LongCat's) is recorded with the key read as vLLM's
SpeculativeConfig reads it (getattr, default 1).
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_mtp_models", HERE.parents[1] / "mtp_draft" / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)

# (openPangu's config class, registered on import)
_pc = importlib.util.spec_from_file_location("pangu_config",
                                             HERE.parent / "openpangu" / "pangu_config.py")
_pc.loader.exec_module(importlib.util.module_from_spec(_pc))
SUBSTITUTIONS = rmm.SUBSTITUTIONS + [
    "model_type pangu_ultra_moe: a PretrainedConfig holding the config.json's keys as given",
    "num_nextn_predict_layers read with getattr(..., 1) in the record where a config lacks it "
    "(LongCat-Flash's; vLLM's SpeculativeConfig reads it so)"]
CASES = {"longcat-flash-l2": HERE.parent / "longcat" / "longcat-flash-l2.config.json",
         "longcat-flash-other": HERE.parent / "longcat" / "longcat-flash-other.config.json",
         "tiny-pangu-ultra-moe": HERE.parent / "openpangu" / "tiny-pangu-ultra-moe.config.json",
         "tiny-pangu-ultra-moe-no-q-lora":
             HERE.parent / "openpangu" / "tiny-pangu-ultra-moe-no-q-lora.config.json"}


def _dir(case):
    d = Path(tempfile.mkdtemp())
    (d / "config.json").write_text(CASES[case].read_text())
    return d


rmm.preset_config = _dir


def main():
    # (record_mtp_models reads dm.hf_config.num_nextn_predict_layers directly)
    import transformers.models.longcat_flash.configuration_longcat_flash as lc
    if not hasattr(lc.LongcatFlashConfig, "num_nextn_predict_layers"):
        lc.LongcatFlashConfig.num_nextn_predict_layers = 1
    rmm.HERE = Path(tempfile.mkdtemp())     # (its answers.json written there, not kept)
    sys.argv[1:] = list(CASES)
    rmm.main()
    out = json.loads((rmm.HERE / "answers.json").read_text())
    out["substitutions"] = SUBSTITUTIONS
    (HERE / "specs_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
