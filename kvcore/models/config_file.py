"""A model's config.json (`--model-config FILE`) read into its geometry once per version of the
file (`kvcore.read_once`): every start-up of a run asked for it, a cluster's every replica's
too (40,001 reads for 40,000 replicas), and ``-`` had nothing left the second time ("<stdin>:1:
not valid JSON: Expecting value"). A bad file says the same line each time it is asked for."""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.hf_quant_file import with_quant_file
from kvcore.read_once import ReadOnce


def _read(path: str) -> ModelGeometry:
    # (a ModelOpt checkpoint's hf_quant_config.json beside it, where vLLM reads it)
    return read_hf_config(with_quant_file(load_hf_config(path), path), source=path)


# (the geometry is frozen: every caller may hold the one read)
read_config_file: ReadOnce[ModelGeometry] = ReadOnce(_read)
