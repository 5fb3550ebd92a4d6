"""A model's config.json (`--model-config FILE`) read into its geometry once per version of the
file (`kvcore.read_once`): every start-up of a run asked for it, a cluster's every replica's
too (40,001 reads for 40,000 replicas), and ``-`` had nothing left the second time ("<stdin>:1:
not valid JSON: Expecting value"). A bad file says the same line each time it is asked for."""

from __future__ import annotations

from kvcore.errors import InputError
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.hf_quant_file import in_quant_file, with_quant_file
from kvcore.read_once import ReadOnce


def _read(path: str) -> ModelGeometry:
    # (a ModelOpt checkpoint's hf_quant_config.json beside it, where vLLM reads it; a bad
    # field there named in it)
    cfg = load_hf_config(path)
    try:
        return read_hf_config(with_quant_file(cfg, path), source=path)
    except InputError as e:
        raise in_quant_file(e, cfg, path) from None


# (the geometry is frozen: every caller may hold the one read)
read_config_file: ReadOnce[ModelGeometry] = ReadOnce(_read)
