"""The class vLLM 0.33 cannot build on a pipeline stage without the LM head when its
embeddings are tied: ernie45_moe.py's Ernie4_5_MoeForCausalLM ties ``self.lm_head`` to the
embedding outside its ``is_last_rank`` branch, so every stage before the last asks a
PPMissingLayer for ``tie_weights`` and raises (where the other classes tie inside the branch).
Recorded: tests/data/moe_stages/ernie45-moe-tied (PP 2, stage 0; the untied
ernie45-moe-start2 builds every stage). ernie45_vl_moe.py's text model does the same
(unrecorded: not refused here).
"""

from __future__ import annotations

from kvcore.models.geometry import ModelGeometry

# architecture -> vLLM's error, word for word
TIED_HEAD_STAGE = {
    "Ernie4_5_MoeForCausalLM":
        "AttributeError: 'PPMissingLayer' object has no attribute 'tie_weights'",
}


def tied_stage_refusal(g: ModelGeometry, pp: int) -> str | None:
    """vLLM's error where a stage before the last cannot tie the head it lacks (None: every
    stage builds)."""
    why = TIED_HEAD_STAGE.get(g.architecture)
    return why if why is not None and pp > 1 and g.tie_word_embeddings else None
