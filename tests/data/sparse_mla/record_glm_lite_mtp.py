# ruff: noqa
"""Dev tool (not a test): vLLM 0.33's MTP draft (method "mtp") of GLM-4.7-Flash (glm4_moe_lite:
Glm4MoeLiteMTP), its parameters, what it shares with the target, its KV cache spec and the
groups with the target's (-> glm_lite_mtp_answers.json), for tests/test_glm_lite_mtp.py.

    R=~/.cache/vllm-oracle
    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$R/src:tests/data/mtp_draft/oracle_stubs_vision \\
        $R/venv/bin/python tests/data/sparse_mla/record_glm_lite_mtp.py

../mtp_draft/record_mtp_models.py's `build` (imported, every substitution it lists written into
the answers: the CPU's TRITON_MLA backend for a dense MLA model) over ../mla/glm-4.7-flash.
"""
import importlib.util, json, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_mtp_models", HERE.parent / "mtp_draft" / "record_mtp_models.py")
rmm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rmm)

CASES = {"glm-4.7-flash": HERE.parent / "mla" / "glm-4.7-flash.config.json"}


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
    out["substitutions"] = rmm.SUBSTITUTIONS
    (HERE / "glm_lite_mtp_answers.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
