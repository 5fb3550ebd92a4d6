"""Record what vLLM 0.33 builds, rank by rank, for the configs here (written by
make_metadata_cases.py; -> answers.json), each config.json beside a safetensors file made from
its ``.header.json`` where it has one (the header only: vLLM's AWQ and GPTQ configs read
nothing else of it, maybe_update_config): ../families/record_families.py's build and
substitutions at TP 1, 2 and 4. A development tool, never run by the tests. From the project
root:

    ulimit -v 16000000; HF_HUB_OFFLINE=1 VLLM_LOGGING_LEVEL=ERROR \\
        PYTHONPATH=$ORACLE_HOME/src:tests/data/mtp_draft/oracle_stubs_vision:$CT_PKGS \\
        timeout 1500 $ORACLE_HOME/venv/bin/python \\
        tests/data/weights_census/awq_metadata/record_metadata.py [NAME.config.json ...]
"""
# ruff: noqa
import importlib.util, json, struct, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("record_families",
                                              HERE.parent / "families" / "record_families.py")
rf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rf)
_mkdtemp = tempfile.mkdtemp
HEADER = {}     # (the header the next config's folder gets)


def with_checkpoint(*a, **k):
    """record_census's folder for the config, with the case's safetensors header in it."""
    d = _mkdtemp(*a, **k)
    if HEADER:
        raw = json.dumps(HEADER).encode()
        (Path(d) / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return d


def set_header(name):
    """The header the config's checkpoint folder gets (none where it has no .header.json)."""
    header = HERE / name.replace(".config.json", ".header.json")
    HEADER.clear()
    HEADER.update(json.loads(header.read_text()) if header.exists() else {})


def main():
    rf.rc.tempfile.mkdtemp = with_checkpoint
    rf.record_folder(HERE, before_each=set_header)


if __name__ == "__main__":
    main()
