"""The Mamba state a hybrid model's attention block is raised for, read from its config: where
it keeps Mamba layers, and where vLLM 0.33 deems the model hybrid though it keeps none.

vLLM's ``ModelConfig.is_hybrid`` (config/model.py:2041) asks the class (IsHybrid), then the
top-level config's ``layer_types``: None, or any entry besides "attention" / "full_attention",
and the model is hybrid, so the platform raises the attention block to hold a Mamba page
(platforms/interface.py's _align_hybrid_block_size, the page from the config's state shape,
whatever layers are kept). So a Qwen3.5 under its wrapper (whose config has no layer_types)
cut to attention layers alone still pages for its Gated DeltaNet state, a Qwen3-Next or Jamba
whose own layer types are all attention does not, and a Nemotron-H whose pattern keeps MLP
layers beside attention does. Found by tests/data/size_fuzz (seed 2: MiniCPM-V 4.7, s2-0141;
the hand-cut cases of targeted.py)."""

from __future__ import annotations

from typing import Any

from kvcore.models.geometry import MambaGeometry
from kvcore.models.lfm2 import lfm2_conv_state
from kvcore.models.mamba_state import mamba_state
from kvcore.models.nemotron_h import nemotron_h_mamba
from kvcore.models.qwen3_5 import GDN_TYPES, ssm_dtype
from kvcore.models.qwen3_next import gdn_state

# Text model types whose vLLM classes are IsHybrid and whose state kvcli reads from the config
# (Kimi Linear's: `kvcore.models.kimi_linear`, whose config class has no layer_types at all)
HYBRID_TYPES = (*GDN_TYPES, "nemotron_h", "jamba", "granitemoehybrid", "lfm2", "lfm2_moe")


def vllm_hybrid(wrapped: bool, model_type: str, kinds: tuple[str, ...]) -> bool:
    """Whether vLLM deems the model hybrid (`wrapped`: its text config under a wrapper's,
    whose top-level config has no layer_types; `kinds`: kvcore's layer kinds, "full" the
    attention layers its layer_types would name "attention" or "full_attention")."""
    if "mamba" in kinds or "parallel" in kinds:
        return True
    return model_type in HYBRID_TYPES and (wrapped or any(k != "full" for k in kinds))


def hybrid_mamba(c: dict[str, Any], wrapped: bool, model_type: str, kinds: tuple[str, ...],
                 hidden: int, archs: Any, dtype: str, nemotron: bool, get, get_dim,
                 source: str) -> MambaGeometry | None:
    """The Mamba state of a model vLLM deems hybrid (None: not hybrid)."""
    if not vllm_hybrid(wrapped, model_type, kinds):
        return None
    if nemotron:
        return nemotron_h_mamba(get, get_dim, source, archs, dtype)
    if model_type in GDN_TYPES:
        return gdn_state(get_dim, None if model_type == "qwen3_next" else ssm_dtype(c, source))
    if model_type == "lfm2" and "Lfm2VlForConditionalGeneration" in (archs or ()):
        return lfm2_conv_state(model_type, get, get_dim, vl=True)
    return mamba_state(c, model_type, hidden, get, get_dim, source)
