"""A multimodal config's ``vision_config``, read for the weights estimate: each size given, or
its config class's default (Qwen3.5's vision tower: `kvcore.models.qwen3_5`; Gemma 3's SigLIP:
`kvcore.models.siglip`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from kvcore.errors import InputError, clipped


class VisionLinear(NamedTuple):
    """One of a vision tower's linears that vLLM builds with the model's quant_config
    (`kvcore.models.fp8_vision`): its vLLM module path, its output partitions and input width
    (whole, before TP), how TP splits it ("column", "row"; "replicated" under
    ``--mm-encoder-tp-mode data``) and, for a fused one, its checkpoint shards' names (the
    class's packed_modules_mapping; () for itself); ``heads``: the attention heads a TP size
    must divide for it to split at all, else it is whole on every rank (InternViT's attention,
    ``disable_tp``: `split_at`; 0: always split); ``cast``: the class casts it to the model
    dtype once built (MiniCPM-V's resampler: `kvcore.models.tower_cast`); ``least_tp``: the
    smallest TP size at which it is built with the quant_config at all (`built_at`; below, a
    plain nn.Linear in the model dtype: DeepSeek-VL2's timm MLPs, swapped above TP 1)."""
    path: str
    parts: tuple[int, ...]
    inp: int
    split: str
    shards: tuple[str, ...] = ()
    heads: int = 0
    cast: bool = False
    least_tp: int = 1


def built_at(linears: tuple[VisionLinear, ...], tp: int) -> list[VisionLinear]:
    """The linears built with the quant_config at `tp` (`VisionLinear.least_tp`)."""
    return [lin for lin in linears if tp >= lin.least_tp]


def split_at(lin: VisionLinear, tp: int) -> str:
    """How the linear splits at `tp`: "replicated" where TP does not divide its heads."""
    return "replicated" if lin.heads and lin.heads % tp else lin.split


def rank_shape(lin: VisionLinear, tp: int) -> tuple[tuple[int, ...], int]:
    """(output partitions, input width) the linear has on one rank of `tp` (`split_at`): the
    outputs split for a column-parallel one, the input for a row-parallel one."""
    split = split_at(lin, tp)
    if split == "column":
        return tuple(p // tp for p in lin.parts), lin.inp
    return lin.parts, lin.inp // tp if split == "row" else lin.inp


class TowerPart(NamedTuple):
    """One of a model's towers (with its embedder) where it has several, each skipped on its
    own: Gemma 3n's and Gemma 4's vision and audio towers (`kvcore.models.mm_serving`): its
    modalities (none: built whatever the limits), parameters (all, whole on every rank) and
    buffer bytes; ``tp_fallback``: (heads, params): those of the rest that stay whole where the
    TP size does not divide the heads (Qwen3-Omni's audio encoder: `disable_tp`)."""
    modalities: tuple[str, ...]
    total: int
    whole: int
    buffers: int
    tp_fallback: tuple[int, int] = (0, 0)


class VisionParams(NamedTuple):
    """A vision tower's parameters (its projector's included): all of them, and those every
    tensor-parallel rank keeps whole (embeddings, norms, row-parallel biases); a rank holds
    ``whole + (total - whole) // tp``; ``heads``: its attention heads, which vLLM splits over
    TP (a TP that does not divide them is refused, as vLLM's `divide` asserts); ``modalities``:
    the inputs it encodes (vLLM skips it when all their limits are 0); ``data_parallel``:
    whether the class takes ``--mm-encoder-tp-mode data`` (`kvcore.models.mm_serving`);
    ``linears``: those built with the model's quant_config, in the order vLLM builds them;
    ``parts``: its towers, where there are several (their sums are ``total`` and ``whole``);
    ``mlp_width``: its MLP's width, which TP must divide too where it may not (Qwen2-VL's and
    Qwen2.5-VL's: vLLM asserts each shard of a parallel linear whole; 0: not checked);
    ``deepstack``: the scratch tensors the class allocates beside the tower, one
    max_num_batched_tokens x text hidden size a deepstack level (Qwen3-VL's; not Qwen3.5's);
    ``kept``: those of `total`, whole on every rank, that vLLM keeps when it skips the tower
    (LLaVA-NeXT's ``image_newline``, a plain Parameter); ``data_split``: those of `total` that
    stay split over TP under ``--mm-encoder-tp-mode data`` (Llama 4's projector); ``buffers``:
    the tower's buffer bytes, whole on every rank (Gemma 3's and Qwen3.5's:
    `kvcore.models.buffers.vision_buffers`); ``head_bound``: (attention heads, parameters) of
    `total - whole` that vLLM splits over TP only where TP divides the heads and keeps whole on
    every rank otherwise (InternViT's attention: `kvcore.models.internvl_chat`); ``fp32``:
    parameters beside `total` that the class makes in float32 whatever the model dtype, whole
    on every rank (Voxtral's Whisper position table: `kvcore.models.voxtral`); ``kv_floor``:
    (KV heads, parameters of one KV head over the tower) where its attention's KV heads may be
    fewer than the ranks, each of which then holds one head whole (vLLM's QKVParallelLinear
    replicates them: Molmo2's ViT, `kvcore.models.molmo2`)."""
    total: int
    whole: int
    heads: int = 0
    modalities: tuple[str, ...] = ()
    data_parallel: bool = False
    linears: tuple[VisionLinear, ...] = ()
    parts: tuple[TowerPart, ...] = ()
    mlp_width: int = 0
    deepstack: int = 0
    kept: int = 0
    data_split: int = 0
    buffers: int = 0
    head_bound: tuple[int, int] = (0, 0)
    fp32: int = 0
    kv_floor: tuple[int, int] = (0, 0)


def vision_config(cfg: dict[str, Any], source: str) -> dict[str, Any]:
    """The config's ``vision_config``: `tower_config`'s."""
    return tower_config(cfg, "vision_config", source)


def tower_config(cfg: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    """The config's ``vision_config`` (or ``audio_config``: `key`; absent or null: every size
    its class's default). Any
    other value than an object is refused, as transformers' config class refuses it when vLLM
    loads the config (its strict dataclass check: "doesn't match any type in (dict,
    PreTrainedConfig)"), where kvcli read a string or a list as absent."""
    v = cfg.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"must be an object (or null), got {clipped(v)}: transformers' config "
                         "class refuses it, so vLLM cannot load the model", path=source or None,
                         field=key)
    return v


# the towers' layer counts, capped as the text model's are (config_aliases.MAX_LAYERS): the
# towers list their linears layer by layer, and 10^8 layers (below 2^31) looped for minutes
LAYER_KEYS = frozenset({"num_hidden_layers", "depth", "num_layers", "encoder_layers"})
MAX_TOWER_LAYERS = 100_000


def _in_range(x: Any, key: str, least: int) -> bool:
    top = MAX_TOWER_LAYERS if key in LAYER_KEYS else 2**31 - 1
    return isinstance(x, int) and not isinstance(x, bool) and least <= x <= top


def _expected(key: str, least: int) -> str:
    return (f"expected an integer >= {least} and <= {MAX_TOWER_LAYERS:,}" if key in LAYER_KEYS
            else f"expected an integer >= {least}")


def vision_dim(v: dict[str, Any], defaults: dict[str, int], key: str, source: str,
               *, listed: bool = False, key_of: str = "vision_config") -> int:
    """``v[key]``, or the class default; ``listed``: a list gives its first entry (Qwen3.5's
    patch sizes); ``key_of``: the config key `v` is under, for the message ("": the top)."""
    x = v.get(key)
    x = defaults[key] if x is None else x
    if listed and isinstance(x, list) and x:
        x = x[0]
    if not _in_range(x, key, 1):
        raise InputError(f"{_expected(key, 1)}, got {x!r}", path=source or None,
                         field=f"{key_of}.{key}" if key_of else key)
    return x


def vit_layer(d: int, inter: int) -> tuple[int, int]:
    """(whole, split) parameters of one encoder layer of the plain ViT shape most towers build
    (CLIP's, SigLIP's, SigLIP2's, MoonViT's, Llama 4's): two biased LayerNorms, a biased QKV
    (column-parallel) and out_proj (row-parallel), a biased fc1 (column) and fc2 (row), `d` wide
    and `inter` in the MLP. Whole on every TP rank: the norms and the row-parallel biases."""
    return 6 * d, 3 * d * d + 3 * d + d * d + d * inter + inter + inter * d


def config_int(d: dict[str, Any], key: str, default: int | None, field: str, source: str,
               least: int = 1) -> int:
    """``d[key]`` (absent: `default`), an integer from `least` below 2^31; else an InputError
    naming `field` (a config key of the remote-code towers, which vLLM reads as it is)."""
    x = d.get(key, default)
    if not isinstance(x, int) or not _in_range(x, key, least):
        raise InputError(f"{_expected(key, least)}, got {clipped(x)}", path=source or None,
                         field=field)
    return x


def linears_loaded(total: int, kept: int, parts: tuple[TowerPart, ...]) -> bool:
    """Whether the tower that holds the quantised linears is loaded: a tower of `total`
    parameters, `kept` of them kept when it is skipped; with `parts` (the omni thinkers'), the
    vision part (its ``image`` modality), which the limits drop on its own (its total then 0).
    Where it is not, vLLM still constructs it, so its refusals stand."""
    if parts:
        return any(p.total and "image" in p.modalities for p in parts)
    return total > kept
