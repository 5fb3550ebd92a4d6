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
without a word); else ``Linear`` (vLLM matches module class names by containment: every linear
class holds "Linear"); else it stays in the model dtype. The routed experts are matched by
their three projections' names (``model.layers.N.mlp.experts.0.gate_proj``; Mixtral's w1 / w3
/ w2; Nemotron-H's up_proj and ``None``, as vLLM spells them), ``Linear``'s scheme when no
target names them; the three must agree ("All MoE projections need to have same quantization
scheme but found multiple"), an ignored one counting as unquantised: so an ignore entry naming
the experts' module itself (``model.layers.1.mlp.experts``) leaves them quantised.
Class-name targets other than ``Linear`` are not modelled (`kvcore.models.ct_quant.read`
returns None); a regex matched against a class name rather than the path is not either.
Checked against vLLM's classes (tests/data/weights_census/quant_rules/, the ``-ct-`` cases).
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


def _first(value: str, targets: list[str]) -> str | None:
    return next((t for t in targets if (re.match(t[3:], value) if t.startswith("re:") else
                                        t == value)), None)


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
    if hit is None and "Linear" in names:
        hit = "Linear"
    return dict(q.targets)[hit] if hit is not None else None


def experts_quant(q: IntQuant, model_type: str, path: str, source: str) -> IntQuant | None:
    """The scheme vLLM builds the routed experts at `path` with (None: unquantised), and its
    refusals of them."""
    names = [f"{path}.0.{p}"
             for p in _EXPERT_PROJS.get(model_type, ("gate_proj", "up_proj", "down_proj"))]
    targets = dict(q.targets) if q.targets else {"Linear": q}
    found: list[IntQuant | None] = []
    for name in names:
        if ignored(q, name, None, source):
            found.append(None)
            continue
        # (vLLM adds a "RoutedExperts" target, Linear's scheme, at the map's end)
        hit = _first(name, list(targets))
        found.append(targets[hit] if hit is not None else targets.get("Linear"))
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
