"""An EAGLE-3 draft config's own keys, read as vLLM 0.33's Eagle3LlamaForCausalLM reads them
(model_executor/models/llama_eagle3.py: ``eagle_config``'s ``use_aux_hidden_state``,
``norm_before_fc`` and ``eagle_aux_hidden_state_layer_ids``; ``target_hidden_size``,
``num_aux_hidden_states``, ``fc_norm``, ``draft_vocab_size``). They are read beside
`read_hf_config` (whose refusals name a wrapper's text keys by their path,
`kvcore.models.text_key_paths`), so a value vLLM cannot build with is refused here, naming the
key by its path in the draft's file (``eagle_config.eagle_aux_hidden_state_layer_ids``): a
number there, or a word for a width, ended in a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError, shown_value


@dataclass(frozen=True, slots=True)
class Eagle3Keys:
    fc_in: int              # the fc's input width: the target's hidden size x its aux states
    use_aux: bool           # the fc reads the target's auxiliary hidden states (else no fc)
    norm_before_fc: bool    # one RMSNorm a fc input (eagle_config's, else the config's)
    fc_norm: bool
    draft_vocab: int        # the draft's own LM head rows


def _width(cfg: dict[str, Any], key: str, default: int, source: str) -> int:
    """``cfg[key]``, a positive integer (vLLM multiplies it into a linear's width)."""
    v = cfg.get(key)
    if v is None or v == 0:     # (kvcli's reading of a null or 0: the default)
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise InputError(f"must be a positive integer, got {shown_value(v)}",
                         path=source or None, field=key)
    return v


def eagle3_keys(cfg: dict[str, Any], hidden: int, vocab: int, source: str) -> Eagle3Keys:
    """The EAGLE-3 draft config `cfg`'s keys (`hidden`, `vocab`: its own hidden size and
    vocabulary); an InputError naming the key's path for a value vLLM cannot build with."""
    given = cfg.get("eagle_config")
    if given is not None and not isinstance(given, dict):
        # (vLLM reads it with `in` and .get: a list or a word fails there)
        raise InputError(f"must be an object, got {shown_value(given)}", path=source or None,
                         field="eagle_config")
    extra: dict[str, Any] = given or {}
    key = "eagle_aux_hidden_state_layer_ids"
    ids = extra.get(key)
    if ids and not (isinstance(ids, list) and all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids)):
        raise InputError(f"must be a list of the target's layer ids, got {shown_value(ids)}",
                         path=source or None, field=f"eagle_config.{key}")
    n_aux = _width(cfg, "num_aux_hidden_states", len(ids) if ids else 3, source)
    target_hidden = _width(cfg, "target_hidden_size", hidden, source)
    return Eagle3Keys(fc_in=target_hidden * n_aux,
                      use_aux=bool(extra.get("use_aux_hidden_state", True)),
                      norm_before_fc=bool(extra.get("norm_before_fc",
                                                    cfg.get("norm_before_fc"))),
                      fc_norm=bool(cfg.get("fc_norm")),
                      draft_vocab=_width(cfg, "draft_vocab_size", vocab, source))
