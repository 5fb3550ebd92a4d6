"""DeepSeek-V3's multi-token-prediction module as vLLM 0.33 drafts with it (method "mtp"): the
draft is the target's own checkpoint (`tests/data/sched_spec_mtp/DESIGN.md`).

vLLM rewrites a deepseek_v3 config into `DeepSeekMTPModel` with ``n_predict`` =
``num_nextn_predict_layers`` (config/speculative.py:733-765) and refuses method mtp for the
other MLA models kvcli reads ("Unsupported speculative method: 'mtp'"). One module is run K
times (deepseek_mtp.py:217, 231): the scheduler sees exactly EAGLE-3's rules. Several modules
change the prefill lookahead and the hashes (multi-module MTP): refused here.

What the module adds (`tests/data/mtp_draft/`, recorded from vLLM's `DeepSeekMTP`): its MLA
layer, named after the target's layers and equal to theirs but for `is_draft`, so it joins the
target's MLA group (a block costs 62 of DeepSeek-V3's 61-layer pages); and its weights: a
whole decoder layer (MLA and MoE, quantised as the target's), ``eh_proj`` (a plain linear from
2 x hidden, never quantised, on every worker), and ``enorm``, ``hnorm`` and the shared head's
norm. The embedding and the LM head are the target's (vLLM shares them at load).
"""

from __future__ import annotations

from dataclasses import replace

from kvcore.errors import InputError
from kvcore.models.eagle_draft import DraftModel
from kvcore.models.geometry import ModelGeometry

FIELD = "spec_method"


def mtp_draft(target: ModelGeometry) -> DraftModel:
    """The MTP draft of `target`, or the InputError vLLM's refusal (or kvcli's) becomes."""
    if target.model_type != "deepseek_v3" or target.mla is None:
        raise InputError(f"mtp with {target.name} ({target.model_type or 'no model_type'}): "
                         "vLLM 0.33 refuses it, 'Unsupported speculative method: mtp' (kvcli "
                         "models DeepSeek-V3's MTP module)", field=FIELD)
    n = target.mtp_layers
    if n != 1:
        why = ("has no MTP module (num_nextn_predict_layers 0)" if n == 0 else
               f"has {n} MTP modules: vLLM's multi-module MTP (a prefill lookahead and block "
               "hashes of K tokens) is not modelled")
        raise InputError(f"mtp with {target.name}: it {why}", field=FIELD)
    last = target.layer_kinds[-1]
    moe = target.moe_layers[-1] if target.moe_layers else False
    g = replace(target, name=f"{target.name} MTP", layer_kinds=(last,), moe_layers=(moe,),
                counted_moe_layers=int(moe), mtp_layers=0)
    h = target.hidden_size
    return DraftModel(f"{target.name} MTP", "mtp", "DeepSeekMTP", g, split_params=0,
                      whole_params=2 * h * h + 3 * h, id_map_entries=0,
                      lm_head_rows=target.vocab_size, pass_whole=2 * h * h,
                      target=target, repeated=1)
