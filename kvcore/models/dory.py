"""Dory (vLLM 0.33's DoryForCausalLM, dory.py; its own DoryConfig, model_type ``dory``): a
normalised latent recurrent transformer of one-sublayer blocks, each attention or an MLP by
``layer_types`` (sliding_attention, full_attention, mlp). The first ``n_input_layers`` run
once, the next ``n_recurrent_layers`` ``n_recurrent_loops`` times, the last
``n_output_layers`` once. Under ``recurrent_kv_cache_mode`` per_loop (the default) a recurrent
attention block builds an Attention a loop, loop p's named ``layers.{p x N + i}``, registered
block by block (i, N + i, 2N + i, then the next block); under last_loop one, overwritten by
each loop. A sliding block's window is ``sliding_window`` (a SlidingWindowSpec of exactly
that), a full one's none. Checked on the meta device: tests/data/refused_lifted/.

Its weights (`kvcore.models.dory_weights`): the embedding and an untied head (rows padded
to 64), the head's ``logit_scale`` (a value a vocabulary entry), an attention block's QKV,
output gate (``g_proj``), output, ``sqk``, ``s_gate`` and ``attn_alpha``, an MLP block's
gate/up, down, ``suv_gate``, ``suv_up`` and ``mlp_alpha``; no norms. Its RoPE: one get_rope
cache a distinct ``rope_parameters[block type]``. vLLM builds it on one rank only (its
ValueError at TP > 1) and without pipeline parallelism; kvcli refuses what DoryConfig.validate
refuses (by key), a quantised checkpoint's weights, and the roofline clock's time for it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvcore.errors import InputError, clipped

DORY = "dory"
# (DoryConfig's defaults, vLLM 0.33's transformers_utils/configs/dory.py)
DEFAULTS: dict[str, Any] = {
    "vocab_size": 131072, "hidden_size": 2560, "num_hidden_layers": 72,
    "intermediate_size": 7168, "num_attention_heads": 16, "num_key_value_heads": 4,
    "head_dim": 256, "max_position_embeddings": 8192, "tie_word_embeddings": False,
    "sliding_window": 1024}
_KINDS = {"sliding_attention": "sliding", "full_attention": "full", "mlp": "mlp"}
_THETA = 10000.0    # (DoryConfig.default_theta)
_MOST = 100_000     # (caches: `config_aliases.MAX_LAYERS`, which imports what imports this)


class DoryLayout(NamedTuple):
    recurrent: range        # (the blocks run n_recurrent_loops times)
    loops: int
    per_loop: bool          # (an Attention a loop in each recurrent attention block)

    def copies(self, i: int) -> int:
        """The Attentions block i builds (if attention): one a loop where it recurs."""
        return self.loops if self.per_loop and i in self.recurrent else 1


def _bad(field: str, why: str, source: str) -> InputError:
    return InputError(f"{why} (DoryConfig.validate: vLLM 0.33 refuses it)",
                      path=source or None, field=field)


def _types(c: dict[str, Any], n: int) -> list[Any]:
    given = c.get("layer_types")
    if given is None:       # (DoryConfig's: MLP at odd blocks, full at i % 8 == 6)
        return ["mlp" if i % 2 else "full_attention" if i % 8 == 6 else "sliding_attention"
                for i in range(n)]
    return given if isinstance(given, list) else [given]


def dory_kinds(c: dict[str, Any], n: int, source: str) -> tuple[str, ...]:
    """Each block's kind (sliding, full or mlp), checked as DoryConfig checks them."""
    types = _types(c, n)
    if len(types) != n or any(not isinstance(t, str) or t not in _KINDS for t in types):
        raise _bad("layer_types", f"expected {n} of sliding_attention, full_attention or mlp, "
                   f"got {clipped(c.get('layer_types'))}", source)
    window = c.get("sliding_window", DEFAULTS["sliding_window"])
    if "sliding_attention" in types and not (type(window) is int and window > 0):
        raise _bad("sliding_window", f"sliding blocks need a positive window, got "
                   f"{clipped(window)}", source)
    for key in ("attention_bias", "mlp_bias"):     # (its head's tie: `models.class_tie`)
        if c.get(key, False) is not False:
            raise _bad(key, f"Dory's projections are bias-free, got {clipped(c[key])}", source)
    if c.get("hidden_act", "silu") != "silu":
        raise _bad("hidden_act", f"Dory requires SiLU, got {clipped(c['hidden_act'])}", source)
    return tuple(_KINDS[t] for t in types)


def _whole(c: dict[str, Any], key: str, default: int, source: str) -> int:
    v = c.get(key) if c.get(key) is not None else default
    if type(v) is not int or not 0 <= v <= _MOST:
        raise _bad(key, f"expected an integer >= 0, got {clipped(v)}", source)
    return v


def dory_layout(c: dict[str, Any], n: int, source: str) -> DoryLayout:
    n_in = _whole(c, "n_input_layers", 0, source)
    n_out = _whole(c, "n_output_layers", 0, source)
    n_rec = _whole(c, "n_recurrent_layers", n - n_in - n_out, source)
    if n_in + n_rec + n_out != n:
        raise _bad("n_recurrent_layers", f"input, recurrent and output blocks ({n_in}, "
                   f"{n_rec}, {n_out}) must sum to num_hidden_layers ({n})", source)
    loops = _whole(c, "n_recurrent_loops", 1, source)
    if loops < 1 or n * loops > _MOST:
        raise _bad("n_recurrent_loops", f"expected a positive integer, got {loops}", source)
    mode = c.get("recurrent_kv_cache_mode", "per_loop")
    if mode not in ("per_loop", "last_loop"):
        raise _bad("recurrent_kv_cache_mode", f"expected per_loop or last_loop, got "
                   f"{clipped(mode)}", source)
    return DoryLayout(range(n_in, n_in + n_rec), loops, mode == "per_loop")


def dory_loop_specs(specs: dict[str, Any], layout: DoryLayout, n: int) -> dict[str, Any]:
    """``specs`` (``layers.{i}``: the attention blocks') with each recurrent block's later
    loops' caches after its own, as vLLM registers them."""
    out = {}
    for name, spec in specs.items():
        i = int(name.split(".")[1])
        out.update({f"layers.{p * n + i}": spec for p in range(layout.copies(i))})
    return out


def extra_attentions(kinds: tuple[str, ...], layout: DoryLayout,
                     layers: range | None = None) -> int:
    """The Attentions the later loops add (each with its four scales)."""
    return sum(layout.copies(i) - 1 for i, k in enumerate(kinds)
               if k != "mlp" and (layers is None or i in layers))


def dory_ropes(c: dict[str, Any], n: int, head_dim: int,
               source: str) -> tuple[list[dict[str, Any]], list[tuple[str, ...]]]:
    """The RoPE parameters of each attention block type its blocks use (in their order) and
    its kind, each given set checked as DoryConfig.validate_rope checks them."""
    types = [t for t in dict.fromkeys(_types(c, n)) if t != "mlp"]
    given = c.get("rope_parameters")
    if given is None:           # (DoryConfig's: default RoPE for each type present)
        given = {t: {"rope_type": "default", "partial_rotary_factor": 1.0} for t in types}
    if not isinstance(given, dict) or set(given) - {"sliding_attention", "full_attention"}:
        raise _bad("rope_parameters", "expected RoPE parameters by block type "
                   "(sliding_attention, full_attention)", source)
    checked = {}
    for t, p in given.items():
        p = {"rope_theta": _THETA, **p} if isinstance(p, dict) else p
        fraction = p.get("partial_rotary_factor", 1.0) if isinstance(p, dict) else None
        theta = p.get("rope_theta") if isinstance(p, dict) else None
        if not isinstance(p, dict) or p.get("rope_type") != "default" \
                or not (isinstance(theta, (int, float)) and theta > 0) \
                or not (isinstance(fraction, (int, float)) and 0 < fraction <= 1) \
                or int(head_dim * fraction) % 2 or int(head_dim * fraction) < 1:
            raise _bad("rope_parameters", f"Dory requires default RoPE with a positive "
                       "rope_theta and a positive even rotary dimension, got "
                       f"{clipped(p)}", source)
        checked[t] = p
    if missing := [t for t in types if t not in checked]:
        raise _bad("rope_parameters", f"no RoPE parameters for {missing[0]} blocks", source)
    return [checked[t] for t in types], [(_KINDS[t],) for t in types]
