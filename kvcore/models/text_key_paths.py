"""A refused key of a wrapper's text config named by its path in the file: the geometry is read
from the text config (`kvcore.models.text_config.text_model`), whose readers name a key bare
('moe_num_shared_experts') where the user must find it as ``text_config.moe_num_shared_experts``
(``llm_config.``, DeepSeek-VL2's and DeepSeek-OCR's ``language_config.``, the omni models' and
Qwen3-ASR's ``thinker_config.text_config.``). `named_by_path` wraps the reader once: an error
whose field is a key of the text config only, or one the text reader says is missing from
both, takes the prefix; one naming a key of the wrapper (``vision_config.hidden_size``), a key
both give (the wrapper's ``architectures``, ``quantization_config``, dtype or Ovis's
``hidden_size``, which vLLM reads from the wrapper), or a path already written whole, does not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

from kvcore.errors import InputError
from kvcore.models.text_config import text_model, text_path

T = TypeVar("T")


def _named(err: InputError, where: tuple[str, dict[str, Any], set[str]]) -> InputError:
    path, text, around = where
    if err.field is None:
        return err
    head = re.split(r"[.\[]", err.field, maxsplit=1)[0]
    # (a key missing from both: the text reader's `missing 'key'`, not a wrapper reader's)
    if head in around or head not in text and not err.message.startswith(f"missing '{head}'"):
        return err
    return InputError(err.message, path=err.path, line=err.line, field=f"{path}.{err.field}",
                      remedy=err.remedy)


def named_by_path(read: Callable[..., T]) -> Callable[..., T]:
    """`read` (a config dict first, ``source`` a keyword) with its refusals of the text
    config's keys named by their path. The text config is found first, unwrapped: a refusal
    of finding it names its own field (`read` meets it again, in its own order)."""
    @functools.wraps(read)
    def wrapped(cfg: dict[str, Any], *args: Any, **kwargs: Any) -> T:
        where = text_path(cfg) if isinstance(cfg, dict) else None
        if where is None:
            return read(cfg, *args, **kwargs)
        try:
            text_model(cfg, kwargs.get("source", ""))
        except InputError:
            return read(cfg, *args, **kwargs)
        try:
            return read(cfg, *args, **kwargs)
        except InputError as err:
            raise _named(err, where) from None
    return wrapped
