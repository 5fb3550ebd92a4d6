"""Model geometry for KV cache sizing: presets typed in from public config.json files, a reader
for a Hugging Face config.json on disk, explicit geometry, and a weights estimate.

    from kvcore.models import load_preset, read_hf_config, load_hf_config, layer_specs
"""

from kvcore.models.geometry import MambaGeometry, ModelGeometry
from kvcore.models.hf_config import load_hf_config, read_hf_config
from kvcore.models.presets import PRESETS, find_preset, load_preset, preset_names
from kvcore.models.weights import estimate_weights_bytes
from kvcore.models.worker_specs import layer_specs

__all__ = [
           "PRESETS",
           "MambaGeometry",
           "ModelGeometry",
           "estimate_weights_bytes",
           "find_preset",
           "layer_specs",
           "load_hf_config",
           "load_preset",
           "preset_names",
           "read_hf_config",
]
