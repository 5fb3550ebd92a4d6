"""The weights census's recorded ranks as pytest parameters (tests/data/weights_census/): each
(case, TP, rank) vLLM 0.33 built, refusals left out, shared by the census tests of the
weights, fp8, int quantisation, drafts and buffers."""

from __future__ import annotations

from collections.abc import Callable, Collection

import pytest


def built_ranks(cases: dict, skip: Collection[str] = (),
                label: Callable[[str], str] = str) -> list:
    """``pytest.param(name, tp, rank)`` for every rank of ``cases`` vLLM built (its record has
    no ``refused``), the cases in ``skip`` left out; ids ``{label(name)}-tp{tp}-r{rank}``."""
    return [pytest.param(n, int(tp), r, id=f"{label(n)}-tp{tp}-r{r}")
            for n, c in cases.items() if n not in skip
            for tp, ranks in c["tp"].items() for r, rec in enumerate(ranks)
            if "refused" not in rec]
