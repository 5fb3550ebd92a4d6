"""Domyn Edge (vLLM 0.33's DomynEdgeForCausalLM, domyn_edge.py): Qwen2's model around layers
of their own: each attention layer its own head size (``per_layer_config[i].head_dim``,
transformers' per-layer overrides of ``head_dim``), its own window (``window_sizes[i][0]``
keys back, which vLLM caches as a window of that + 1; 0: full attention) and RoPE or none
(``position_layers[i]``: rope or nope), a weightless q_norm and a k_norm of the head size,
four norms around a Qwen2 MLP. Its RoPE caches are float32, one a head size of the RoPE
layers (get_rope's cache). vLLM builds it without pipeline parallelism (no SupportsPP).
Checked on the meta device: tests/data/refused_lifted/.

kvcli keeps the geometry's one ``sliding_window`` (the widest, for what reads one window) and
a window a layer (`ModelGeometry.layer_windows`) for the caches; the roofline clock does not
time it.
"""

from __future__ import annotations

from typing import Any

from kvcore.errors import InputError, clipped
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.rank_params import Ledger, on_rank
from kvcore.models.rope_cache import RopeCache

DOMYN = "DomynEdgeForCausalLM"


def is_domyn(c: dict[str, Any]) -> bool:
    archs = c.get("architectures")
    return isinstance(archs, list) and bool(archs) and archs[0] == DOMYN


def _windows(c: dict[str, Any], n: int, source: str) -> tuple[int, ...]:
    given = c.get("window_sizes")
    if not (isinstance(given, list) and len(given) == n and all(
            isinstance(w, list) and w and type(w[0]) is int and w[0] >= 0 for w in given)):
        raise InputError(f"expected {n} [keys back, ...] pairs (one a layer), got "
                         f"{clipped(given)}", path=source or None, field="window_sizes")
    return tuple(w[0] + 1 if w[0] > 0 else 0 for w in given)


def domyn_kinds(c: dict[str, Any], n: int, source: str) -> tuple[str, ...]:
    return tuple("sliding" if w else "full" for w in _windows(c, n, source))


def domyn_windowed(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` with the widest window as its ``sliding_window`` (the geometry's one window)."""
    given = cfg.get("window_sizes")
    if not is_domyn(cfg) or "sliding_window" in cfg or not isinstance(given, list):
        return cfg
    widest = max((w[0] for w in given if isinstance(w, list) and w and type(w[0]) is int),
                 default=0)
    return {**cfg, "sliding_window": widest + 1} if widest > 0 else cfg


def domyn_fields(c: dict[str, Any], n: int, kv_heads: int, head_dim: int,
                 source: str) -> dict[str, Any]:
    """A head size, a window and RoPE or none a layer."""
    overrides = c.get("per_layer_config") or {}
    if not isinstance(overrides, dict):
        raise InputError(f"expected overrides by layer index, got {clipped(overrides)}",
                         path=source or None, field="per_layer_config")
    dims = []
    for i in range(n):
        d = (overrides.get(str(i)) or {}).get("head_dim", head_dim)
        if type(d) is not int or d < 1:
            raise InputError(f"expected a head size >= 1, got {clipped(d)}",
                             path=source or None, field=f"per_layer_config.{i}.head_dim")
        dims.append((kv_heads, d))
    positions = c.get("position_layers")
    if not (isinstance(positions, list) and len(positions) == n
            and all(p in ("rope", "nope") for p in positions)):
        # (vLLM's words: "Unsupported position encoding type for layer i")
        raise InputError(f"expected {n} of rope or nope, got {clipped(positions)}",
                         path=source or None, field="position_layers")
    return {"layer_dims": tuple(dims), "layer_windows": _windows(c, n, source),
            "nope_layers": tuple(p == "nope" for p in positions)}


def domyn_rope_caches(g: ModelGeometry) -> tuple[RopeCache, ...]:
    """float32 caches (domyn_edge.py passes dtype=torch.float), one a RoPE layers' head size."""
    pos = g.max_position_embeddings
    sizes = dict.fromkeys(d for (_, d), nope in zip(g.layer_dims, g.nope_layers, strict=True)
                          if not nope)
    return tuple(RopeCache(pos, d, "float32", f"domyn {d}", pos, 1.0) for d in sizes)


def domyn_ledger(g: ModelGeometry, tp: int) -> Ledger:
    """One rank's parameters (the whole model: vLLM builds no pipeline stages of it)."""
    h = g.hidden_size
    led = Ledger()
    vh = rp.vocab_rows(g, tp) * h
    led.model += vh + (0 if g.tie_word_embeddings else vh) + h
    for _, d in g.layer_dims:
        q = g.num_attention_heads // tp * d
        kv = on_rank(g.num_kv_heads, tp) * d
        led.layer += h * (q + 2 * kv) + q * h + 3 * h * g.intermediate_size // tp
        led.model += d + 4 * h      # (k_norm; q_norm has no weight)
    return led
