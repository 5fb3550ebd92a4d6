"""The model a sizing is for, as a `ModelGeometry`: exactly one of a preset (or its HF repo id),
a Hugging Face config.json, a geometry given whole, or explicit flags (``layers``, ``kv_heads``,
``head_dim``, and which layers slide or attend in chunks), each refused with the option at
fault. `kvcore.sizing.resolve` sizes what `load_geometry` returns.
"""

from __future__ import annotations

from kvcore.errors import InputError, clipped, nonempty_name
from kvcore.models.config_file import read_config_file
from kvcore.models.dtypes import DTYPE_ALIASES
from kvcore.models.geometry import ModelGeometry
from kvcore.models.hf_config import MAX_LAYERS
from kvcore.models.presets import load_preset
from kvcore.named_choices import named_choices
from kvcore.sizing.option_ranges import check_counts


def parse_layer_selection(text: str, n_layers: int, field: str) -> set[int]:
    """``"5:1"`` (5 selected, then 1 not, repeating), or indices and ranges ``"0,2,4-9"``."""
    text = text.strip()
    try:
        if ":" in text:
            a, b = (int(x) for x in text.split(":"))
            if a < 0 or b < 0 or a + b == 0:
                raise ValueError
            return {i for i in range(n_layers) if i % (a + b) < a}
        out: set[int] = set()
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            lo_i, hi_i = int(lo), int(hi) if hi else int(lo)
            if not 0 <= lo_i <= hi_i < n_layers:
                raise ValueError
            out.update(range(lo_i, hi_i + 1))
        return out
    except ValueError:
        raise InputError(f"expected a pattern like 5:1 or layer indices like 0,2,4-9 below "
                         f"{n_layers}, got {clipped(text)}", field=field) from None


def explicit_geometry(*, layers: int, kv_heads: int, head_dim: int, dtype: str,
                      sliding_window: int | None = None, sliding_layers: str | None = None,
                      attention_chunk_size: int | None = None, chunked_layers: str | None = None,
                      max_position_embeddings: int = 131072) -> ModelGeometry:
    """A geometry from flags: every layer full attention unless selected as sliding/chunked."""
    check_counts(layers=layers, kv_heads=kv_heads, head_dim=head_dim)
    if layers > MAX_LAYERS:
        raise InputError(f"must be at most {MAX_LAYERS:,}, got {layers:,}", field="layers")
    for name, given in (("sliding_window", sliding_window),
                        ("attention_chunk_size", attention_chunk_size)):
        if given is not None and given < 0:
            raise InputError(f"must be >= 0 (0: none), got {given}", field=name)
    kinds = ["full"] * layers
    # (a selection without its size is refused: it was dropped and every layer stayed full
    # attention; '' is no selection, refused: it was read as unset, every layer selected)
    for size, selection, field, kind, size_name in (
            (sliding_window, sliding_layers, "sliding_layers", "sliding", "a sliding_window"),
            (attention_chunk_size, chunked_layers, "chunked_layers", "chunked",
             "an attention_chunk_size")):
        if size:
            sel = (parse_layer_selection(selection, layers, field)
                   if selection is not None else set(range(layers)))
            for i in sel:
                kinds[i] = kind
        elif selection is not None:
            raise InputError(f"needs {size_name}", field=field)
    return ModelGeometry(name="custom", model_type="custom", layer_kinds=tuple(kinds),
                         num_attention_heads=kv_heads, num_kv_heads=kv_heads, head_dim=head_dim,
                         hidden_size=kv_heads * head_dim, dtype=dtype,
                         max_position_embeddings=max_position_embeddings,
                         sliding_window=sliding_window, attention_chunk_size=attention_chunk_size)


def load_geometry(model: str | None = None, *, model_config: str | None = None,
                  geometry: ModelGeometry | None = None, layers: int | None = None,
                  kv_heads: int | None = None, head_dim: int | None = None,
                  dtype: str | None = None, sliding_window: int | None = None,
                  sliding_layers: str | None = None, attention_chunk_size: int | None = None,
                  chunked_layers: str | None = None) -> ModelGeometry:
    nonempty_name(model, "model")       # (a config.json's '' said ": no such file")
    nonempty_name(model_config, "model_config")
    given = [x is not None for x in (model, model_config, geometry, layers)]
    if sum(given) != 1:
        raise InputError("give exactly one of a model preset, a model config (config.json), or "
                         "explicit geometry (layers, kv_heads, head_dim)", field="model")
    explicit = {"kv_heads": kv_heads, "head_dim": head_dim, "sliding_window": sliding_window,
                "sliding_layers": sliding_layers, "attention_chunk_size": attention_chunk_size,
                "chunked_layers": chunked_layers}
    extra = [k for k, v in explicit.items() if v is not None]
    if extra and layers is None:       # a preset or a config.json has its own: not overridden
        raise InputError("describes a model's layers: give it with layers (and kv_heads, "
                         "head_dim), or use a model preset", field=extra[0])
    if geometry is not None:
        return geometry
    if model is not None:
        return load_preset(model)
    if model_config is not None:
        return read_config_file(model_config)
    if layers is None or kv_heads is None or head_dim is None:
        missing = [n for n, v in (("kv_heads", kv_heads), ("head_dim", head_dim)) if v is None]
        raise InputError(f"explicit geometry needs {' and '.join(missing)} with layers",
                         field=missing[0])
    return explicit_geometry(layers=layers, kv_heads=kv_heads, head_dim=head_dim,
                             dtype=normalize_dtype(dtype or "bfloat16", "dtype"),
                             sliding_window=sliding_window, sliding_layers=sliding_layers,
                             attention_chunk_size=attention_chunk_size,
                             chunked_layers=chunked_layers)


def normalize_dtype(name: str, field: str, table: dict[str, str] = DTYPE_ALIASES) -> str:
    v = table.get(name.strip().lower())
    if v is None:
        known = named_choices(name, sorted(table), "dtypes", f"--{field.replace('_', '-')} in "
                              "kvcli config -h")
        raise InputError(f"unknown dtype {clipped(name)}; {known}", field=field)
    return v
