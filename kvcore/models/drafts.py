"""The draft a speculative method runs beside its target, as vLLM 0.33 loads it: an EAGLE
draft from its config.json (`kvcore.models.eagle_draft`), or the target's own MTP module
(`kvcore.models.mtp_draft`)."""

from __future__ import annotations

from kvcore.models.eagle_draft import DraftModel, load_draft
from kvcore.models.geometry import ModelGeometry
from kvcore.models.mtp_draft import mtp_draft


def load_spec_draft(name: str | None, method: str, target: ModelGeometry, k: int = 1
                    ) -> DraftModel:
    """Method `method`'s draft beside `target`, drafting `k` tokens a step (`name`: an EAGLE
    draft's model; MTP has none, its draft is the target's, whose modules K may refuse)."""
    if method == "mtp":
        return mtp_draft(target, k)
    assert name is not None         # (an EAGLE draft is sized only when given)
    return load_draft(name, method, target)
