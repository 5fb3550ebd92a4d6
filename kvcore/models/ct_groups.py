"""compressed-tensors' config groups: the scheme each module takes, as vLLM 0.33 matches a
module against the groups' targets (CompressedTensorsConfig.get_scheme_dict,
compressed_tensors/utils.py find_matched_target) and the routed experts' scheme
(CompressedTensorsMoEMethod.get_moe_method).

The groups' targets form one map, in the config's order (a target two groups name takes the
later group's scheme at the earlier one's place); a group whose one target ends in
"Attention" is dropped (vLLM: attention quantisation is coupled with the KV cache's). A linear
on the ignore list (`kvcore.models.ct_quant.ignored`) is unquantised; else it takes the first
target equal to its vLLM path or a ``re:`` regex re.match-ing it; else, fused, the first
shard's target when every shard matches one (their schemes may differ: vLLM takes the first's
without a word); else the first target contained in its vLLM class's name, any case, or a
regex re.match-ing that name (`CLASSES`: "Linear" is in every linear class's, QKVParallelLinear,
RowParallelLinear, GateLinear; "ParallelLinear" in all but GateLinear; a decoder layer's class
name in none); else it stays in the model dtype. The embedding and the LM head are matched the
same way (`vocab_quant`: "Linear" reaches neither; "Embedding" the embedding, VocabParallel-
Embedding; Llama's embedding has no path, ""). The routed experts are matched by
their three projections' names (``model.layers.N.mlp.experts.0.gate_proj``; Mixtral's w1 / w3
/ w2; Nemotron-H's up_proj and ``None``, as vLLM spells them), ``Linear``'s scheme when no
target names them; the three must agree ("All MoE projections need to have same quantization
scheme but found multiple"), an ignored one counting as unquantised: so an ignore entry naming
the experts' module itself (``model.layers.1.mlp.experts``) leaves them quantised.
The experts' class is RoutedExperts (vLLM adds a "RoutedExperts" target with ``Linear``'s
scheme at the map's end when none is given). Class-name targets are modelled for the classes
in `CLASSES` (`kvcore.models.ct_quant.read` returns None for a model with others). Checked
against vLLM's classes (tests/data/weights_census/quant_rules/, the ``-ct-`` cases).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kvcore.errors import InputError
from kvcore.models.ct_quant import ignored

if TYPE_CHECKING:
    from kvcore.models.int_quant import IntQuant

# the checkpoint's names of an expert's projections, as the model class gives them to FusedMoE
# (gate, up, down; mixtral.py, nemotron_h.py)
_EXPERT_PROJS = {"mixtral": ("w1", "w3", "w2"), "nemotron_h": ("up_proj", "None", "down_proj")}


# vLLM's class of each module kvcli sizes, by its name (llama.py, qwen3.py, qwen3_moe.py,
# mixtral.py): what a class-name target is matched against
CLASSES = {"qkv_proj": "QKVParallelLinear", "o_proj": "RowParallelLinear",
           "gate_up_proj": "MergedColumnParallelLinear", "down_proj": "RowParallelLinear",
           "gate": "GateLinear", "lm_head": "ParallelLMHead",
           "embed_tokens": "VocabParallelEmbedding"}


def _first(value: str, targets: list[str]) -> str | None:
    return next((t for t in targets if (re.match(t[3:], value) if t.startswith("re:") else
                                        t == value)), None)


def _of_class(cls: str, targets: list[str]) -> str | None:
    """The first target a module of class `cls` takes by its class (find_matched_target's
    check_contains: a regex re.match-ing it, or a name inside it, any case)."""
    return next((t for t in targets if (re.match(t[3:], cls) if t.startswith("re:") else
                                        t.lower() in cls.lower())), None)


def vocab_quant(q: IntQuant, path: str, module: str, source: str) -> IntQuant | None:
    """The scheme vLLM builds the embedding or LM head (`module`: embed_tokens, lm_head) at
    `path` with; None where it stays in the model dtype (one group on "Linear" reaches
    neither)."""
    if not q.targets or ignored(q, path, None, source):
        return None
    names = [t for t, _ in q.targets]
    hit = _first(path, names) or _of_class(CLASSES[module], names)
    return dict(q.targets)[hit] if hit is not None else None


def linear_quant(q: IntQuant, path: str, shards: tuple[str, ...] | None,
                 source: str) -> IntQuant | None:
    """The scheme vLLM builds the linear at `path` (fused of `shards`) with; None where it
    builds it unquantised."""
    if ignored(q, path, shards, source):
        return None
    if not q.targets:
        return q
    names = [t for t, _ in q.targets]
    hit = _first(path, names)
    if hit is None and shards:
        proj = path.split(".")[-1]
        each = [_first(path.replace(proj, s), names) for s in shards]
        hit = each[0] if all(each) else None
    if hit is None:
        # (a module whose class kvcli does not list: a linear class, "Linear" in its name)
        cls = CLASSES.get(path.split(".")[-1])
        hit = _of_class(cls, names) if cls else "Linear" if "Linear" in names else None
    return dict(q.targets)[hit] if hit is not None else None


def experts_quant(q: IntQuant, model_type: str, path: str, source: str) -> IntQuant | None:
    """The scheme vLLM builds the routed experts at `path` with (None: unquantised), and its
    refusals of them."""
    names = [f"{path}.0.{p}"
             for p in _EXPERT_PROJS.get(model_type, ("gate_proj", "up_proj", "down_proj"))]
    targets = dict(q.targets) if q.targets else {"Linear": q}
    if "Linear" in targets:
        # (vLLM adds a "RoutedExperts" target, Linear's scheme, at the map's end)
        targets.setdefault("RoutedExperts", targets["Linear"])
    found: list[IntQuant | None] = []
    for name in names:
        if ignored(q, name, None, source):
            found.append(None)
            continue
        hit = _first(name, list(targets)) or _of_class("RoutedExperts", list(targets))
        found.append(targets[hit] if hit is not None else None)
    if any(f != found[0] for f in found):
        raise InputError(f"the groups give {path}'s projections different schemes, and vLLM "
                         "refuses to build it: \"All MoE projections need to have same "
                         "quantization scheme but found multiple\"", path=source or None,
                         field="quantization_config.config_groups")
    e = found[0]
    if e is not None and e.scheme == "int8" and (e.static_input or e.strategy != "channel"):
        # (get_moe_method takes int8 experts with dynamic inputs alone;
        # CompressedTensorsW8A8Int8MoEMethod asserts channelwise weights)
        why = "Unsupported FusedMoe scheme" if e.static_input else "AssertionError"
        raise InputError(f"int8 experts with {e.strategy}-wise weights and "
                         f"{'static' if e.static_input else 'dynamic'} inputs, and vLLM "
                         f"refuses to build them: \"{why}\"", path=source or None,
                         field="quantization_config.config_groups")
    return e
