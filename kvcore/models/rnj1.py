"""RNJ-1 (vLLM 0.33's Rnj1ForCausalLM, rnj1.py): Gemma 3's text layers (transformers'
Gemma3TextConfig, model_type gemma3_text) whose ``chunked_attention`` layers attend block-local
chunks with one chunk of look-back, cached as sliding windows of exactly ``sliding_window``
tokens (`per_layer_sliding_window`: a SlidingWindowSpec, no + 1); every other layer, a
``sliding_attention`` one too, attends fully (its window None). Checked on the meta device:
tests/data/refused_lifted/.

A layer's RoPE is ``rope_parameters[its layer type]``; kvcli reads only configs giving one for
each layer type listed in ``layer_types`` (vLLM fails on a chunked layer without its own: it
hands get_rope the whole per-type dict, a TypeError; transformers' Gemma3TextConfig on a
per-type dict without the full or sliding type's, a KeyError). The weights are Gemma 3's
(four norms a layer, q/k norms), the head its own unless ``tie_word_embeddings``. vLLM serves
it only on the Triton backend (``--attention-backend TRITON_ATTN``: its Attention asserts it
for the chunked layers' look-back), whose block size (16) kvcli sizes at.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError

RNJ1 = "Rnj1ForCausalLM"
CHUNKED = "chunked_attention"


def is_rnj1(c: dict[str, Any]) -> bool:
    archs = c.get("architectures")
    return isinstance(archs, list) and bool(archs) and archs[0] == RNJ1


def rnj1_kinds(listed: tuple[str, ...] | None, source: str) -> tuple[str, ...]:
    """A layer's kind from its (kvcli-named) layer type: chunked slides, the rest full."""
    if listed is None:
        raise InputError("Rnj1ForCausalLM without 'layer_types', which name its chunked "
                         "layers", path=source or None, field="layer_types")
    return tuple("sliding" if kind == "chunked" else "full" for kind in listed)


def rnj1_ropes(c: dict[str, Any], source: str) -> tuple[list[dict[str, Any]],
                                                        list[tuple[int, ...]]]:
    """The RoPE parameters of each layer type the layers use (in their order) and the layers
    of that type (each builds its type's: a pipeline stage holds the caches of its layers'
    types, a sliding_attention layer's apart from a full_attention one's, both full)."""
    given = c.get("rope_parameters")
    given = given if isinstance(given, dict) else {}
    sets: list[dict[str, Any]] = []
    layers: list[tuple[int, ...]] = []
    types = c["layer_types"]
    for t in dict.fromkeys(types):
        if not isinstance(given.get(t), dict):
            raise InputError(f"{t} layers without rope_parameters[{t!r}] (Rnj1ForCausalLM: "
                             "vLLM 0.33 or transformers' Gemma3TextConfig fails without it)",
                             path=source or None, field="rope_parameters")
        sets.append(given[t])
        layers.append(tuple(i for i, u in enumerate(types) if u == t))
    return sets, layers


def backend_note() -> str:
    """The warning that vLLM 0.33 serves RNJ-1 on one attention backend only: a server
    started without it fails at start-up, where kvcli's sizing would pass unremarked."""
    return ("Rnj1ForCausalLM: vLLM 0.33 serves it only with --attention-backend "
            "TRITON_ATTN (its chunked layers' chunk_lookback is that backend's alone: another's "
            "fails at start-up); sized at its block size, 16")
