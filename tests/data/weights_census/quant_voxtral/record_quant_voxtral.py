"""Record what vLLM 0.33 builds, rank by rank, for Voxtral under the quantisation methods (the
configs here, make_cases.py): every ``*.config.json`` of this folder at TP 1, 2, 4 and 8, every
rank (parameter count, bytes by dtype, buffers; rank 0's parameters by name), or the refusal
vLLM raised (-> answers.json).

A development tool, never run by the tests. From the project root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$HOME/.cache/vllm-oracle/src:tests/data/mtp_draft/oracle_stubs_vision\\
:/tmp/ct_pkgs \\
        timeout 3000 ~/.cache/vllm-oracle/venv/bin/python \\
        tests/data/weights_census/quant_voxtral/record_quant_voxtral.py [CASE ...]

It executes ../quant_towers/record_quant_towers.py (its substitutions: the KV-spec census's,
../int_quant's H100 platform), and gives voxtral.py mistral_common's own mel filter bank as
../mm_audio/record_towers.py does (from the copy installed apart in /tmp/mc_pkg).
"""
# ruff: noqa
import importlib.util, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "record_quant_towers", HERE.parent / "quant_towers" / "record_quant_towers.py")
rqt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rqt)
rks = rqt.rks

# (../mm_audio/record_towers.py's: the real (1 + window_size // 2) x num_mel_bins buffer)
MISTRAL_COMMON = Path("/tmp/mc_pkg/mistral_common")
EXTRA = []
if MISTRAL_COMMON.is_dir() and not hasattr(sys.modules.get("mistral_common"), "__file__"):
    for _name in ("deprecation", "audio"):
        _s = importlib.util.spec_from_file_location(f"mistral_common.{_name}",
                                                    MISTRAL_COMMON / f"{_name}.py")
        _m = sys.modules[f"mistral_common.{_name}"] = importlib.util.module_from_spec(_s)
        _s.loader.exec_module(_m)
    from vllm.model_executor.models import voxtral as _voxtral
    _voxtral.mel_filter_bank = _m.mel_filter_bank
    EXTRA = ["Voxtral: mistral_common 1.13.1's own mel_filter_bank (audio.py, from a copy "
             "installed apart) in place of the placeholder's"]


def main():
    rqt.record_names(HERE, sys.argv[1:] or rqt.configs(HERE), EXTRA)


if __name__ == "__main__":
    main()
