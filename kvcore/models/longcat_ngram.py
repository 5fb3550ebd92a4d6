"""LongCat-Flash-Lite (vLLM 0.33's LongcatFlashNgramForCausalLM, longcat_flash_ngram.py):
LongCat-Flash's decoder layers (`kvcore.models.longcat`: two MLA caches a layer) under an
n-gram embedding beside the token embedding, on the first pipeline stage.

With ``ngram_vocab_size_ratio`` given (vLLM's `uses_ngram_embedding`), NgramEmbedding keeps
``k (n - 1)`` hashed tables (``k`` = ``emb_split_num``, ``n`` = ``emb_neighbor_num``), table
i of ``m + 2i + 1`` rows (``m`` = ratio x ``vocab_size``), concatenated into one
VocabParallelEmbedding (its rows padded to 64, split by TP) ``hidden_size // (k (n - 1))``
wide, a projection per table back to ``hidden_size`` (one replicated parameter) and three
int32 buffers for its CUDA kernel: ``vocab^delta mod`` weights ``(n - 1) x k x n``, the moduli
``(n - 1) x k`` and the tables' offsets ``k (n - 1) + 1``. Checked on the meta device, every
rank: tests/data/refused_lifted/.

Its checkpoints' config.json name no model_type: vLLM reads both LongCat-Flash classes as
``longcat_flash`` then (`_ARCHITECTURE_TO_MODEL_TYPE`), and so does kvcli (`typed`). Not
modelled here: the V2 model runner's state for it (a max_num_tokens x hidden inputs_embeds
buffer and a max_num_seqs x (n - 1) int32 context, allocated by the runner, not the model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvcore.errors import InputError
from kvcore.models import rank_params as rp
from kvcore.models.geometry import ModelGeometry
from kvcore.models.longcat import LONGCAT

NGRAM_ARCH = "LongcatFlashNgramForCausalLM"
# vLLM's _ARCHITECTURE_TO_MODEL_TYPE: classes whose checkpoints name no model_type
_TYPED = {"LongcatFlashForCausalLM": LONGCAT, NGRAM_ARCH: LONGCAT}


def typed(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` with the model_type vLLM gives a LongCat-Flash config that names none."""
    archs = cfg.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs else None
    if "model_type" in cfg or not isinstance(arch, str) or arch not in _TYPED:
        return cfg
    return {**cfg, "model_type": _TYPED[arch]}


def ngram_fields(architecture: str, get: Callable[..., Any], get_dim: Callable[..., Any],
                 vocab: int, hidden: int, source: str) -> dict[str, Any]:
    """The n-gram embedding's (rows of each table, tables, width) and its int32 buffers'
    bytes; none for LongcatFlashForCausalLM or without ``ngram_vocab_size_ratio``."""
    if architecture != NGRAM_ARCH or get("ngram_vocab_size_ratio") is None:
        return {}
    ratio = get_dim("ngram_vocab_size_ratio")
    k, n = get_dim("emb_split_num", required=True), get_dim("emb_neighbor_num", required=True)
    tables = k * (n - 1)
    if not tables or hidden < tables:
        # (vLLM divides hidden_size by the tables, a width it then builds each with)
        raise InputError(f"emb_neighbor_num {n} leaves {tables} n-gram tables for hidden_size "
                         f"{hidden}: vLLM's n-gram embedding needs 1 to hidden_size of them",
                         path=source or None, field="emb_neighbor_num")
    m = ratio * vocab
    return {"ngram_tables": tuple(m + 2 * i + 1 for i in range(tables)),
            "class_buffers": 4 * ((n - 1) * k * n + (n - 1) * k + tables + 1)}


def ngram_rank_params(g: ModelGeometry, tp: int) -> int:
    """One rank's n-gram embedding parameters: its share of the padded tables and the
    replicated projections."""
    tables = len(g.ngram_tables)
    if not tables:
        return 0
    width = g.hidden_size // tables
    rows = -(-sum(g.ngram_tables) // rp.VOCAB_PAD) * rp.VOCAB_PAD // tp
    return rows * width + tables * width * g.hidden_size
