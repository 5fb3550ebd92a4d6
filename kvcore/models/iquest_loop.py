"""IQuest-Coder's Loop models (vLLM 0.33's IQuestLoopCoderForCausalLM, iquest_loopcoder.py):
Llama's decoder layers run ``loop_num`` times (default 2) over the same weights. Each layer
builds an attention a pass: the first pass's full (``model.layers.{i}``), each later pass's a
sliding window of ``loop_window_size`` tokens (default 64; ``model.layers.{pass x N + i}``, a
CacheConfig whose ``sliding_window`` is replaced by it). A later pass also reads the first
pass's cache through its own query, mixed by a gate a layer (``gate_projections.{i}``: a
column-parallel linear from a head to the heads, with a bias). So vLLM caches N full layers
then (loop_num - 1) x N sliding ones, every head ``hidden_size / num_attention_heads`` wide
(the file's ``head_dim`` unread). Checked on the meta device: tests/data/refused_lifted/.

kvcli reads its layer kinds in that order (`iquest_kinds`), the window from
``loop_window_size``, and counts the weights of the N decoder layers once, with the gates
(`kvcore.models.weights`). Not modelled, refused by their keys: a model-wide ``sliding_window``
(vLLM's engine then hands it to the first pass's layers too, through CacheConfig, and asserts
``max_window_layers``), a quantised checkpoint's weights (its gates quantised too). vLLM builds
it without pipeline parallelism (no SupportsPP); the roofline clock does not time it (each
layer runs a pass more, attending to two caches).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models.config_aliases import MAX_LAYERS
from kvcore.models.geometry import ModelGeometry

IQUEST_LOOP = "IQuestLoopCoderForCausalLM"
# (iquest_loopcoder.py's getattr defaults)
LOOP_NUM, LOOP_WINDOW = 2, 64


def is_iquest_loop(c: dict[str, Any]) -> bool:
    archs = c.get("architectures")
    return isinstance(archs, list) and bool(archs) and archs[0] == IQUEST_LOOP


def _count(c: dict[str, Any], key: str, default: int, source: str) -> int:
    v = c.get(key)
    if v is None:
        return default
    if type(v) is not int or not 1 <= v <= MAX_LAYERS:
        raise InputError(f"expected an integer >= 1 and <= {MAX_LAYERS:,}, got {clipped(v)}",
                         path=source or None, field=key)
    return v


def iquest_windowed(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """``cfg`` with the later passes' window as its ``sliding_window`` (the geometry's one
    window); a model-wide window refused."""
    if not is_iquest_loop(cfg):
        return cfg
    if cfg.get("sliding_window") is not None:
        raise InputError(
            f"{IQUEST_LOOP} with a model-wide window ({clipped(cfg['sliding_window'])}): vLLM "
            "0.33 then slides the first pass's layers too (CacheConfig.sliding_window), which "
            "kvcli does not model; its later passes' window is loop_window_size",
            path=source or None, field="sliding_window")
    return {**cfg, "sliding_window": _count(cfg, "loop_window_size", LOOP_WINDOW, source)}


def loops(c: dict[str, Any], source: str) -> int:
    return _count(c, "loop_num", LOOP_NUM, source)


def iquest_kinds(c: dict[str, Any], n: int, source: str) -> tuple[str, ...]:
    """The first pass's n full layers, then each later pass's n sliding ones (vLLM's layer
    names in that order)."""
    passes = loops(c, source)
    if n * passes > MAX_LAYERS:
        raise InputError(f"{n} layers run {passes} times: more than {MAX_LAYERS:,} caches",
                         path=source or None, field="loop_num")
    return ("full",) * n + ("sliding",) * (n * (passes - 1))


def iquest_fields(n: int, hidden: int, heads: int, quantised: bool) -> dict[str, Any]:
    """Its head size (hidden / heads, whatever ``head_dim`` says), the decoder layers the
    caches repeat, and a quantised checkpoint's weights left unsized."""
    return {"head_dim": hidden // heads, "loop_layers": n,
            "weights_unmodelled": f"a quantised {IQUEST_LOOP} checkpoint's weights"
            if quantised else ""}


def registration_order(specs: dict[str, Any], n: int) -> dict[str, Any]:
    """``specs`` (``layers.{pass x n + i}``, in pass order) as vLLM registers them: decoder
    layer i builds its passes' attentions one after another, so layer 0's pass 0, 1, ...,
    then layer 1's. vLLM's grouping splits a kind's layers i::groups in that order (tiny
    loop_num 3 over 3 layers: sliding groups 3, 4, 5 and 6, 7, 8; in layer order 3, 5, 7)."""
    passes = len(specs) // n
    return {f"layers.{p * n + i}": specs[f"layers.{p * n + i}"]
            for i in range(n) for p in range(passes)}


def decoder(g: ModelGeometry) -> ModelGeometry:
    """The geometry of its decoder layers, once each (what the weights hold)."""
    return replace(g, layer_kinds=g.layer_kinds[:g.loop_layers], loop_layers=0)


def gate_params(g: ModelGeometry, tp: int) -> int:
    """A rank's loop gates: a layer's head_dim -> heads linear, bias included, split by TP."""
    return g.loop_layers * g.num_attention_heads // tp * (g.head_dim + 1)
