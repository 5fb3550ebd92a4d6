# ruff: noqa
"""Dev tool (not a test): a stand-in for the remote-code config class of NVIDIA's Nemotron-NAS
checkpoints (configuration_decilm.DeciLMConfig, model_type "nemotron-nas"), which transformers
5.20.2 lacks. Written from what the published remote code does (README.md): a LlamaConfig whose
``block_configs`` dicts become frozen records with attribute access (``.attention.no_op``), with
the block_config.py dataclasses' rules:

* a sub-block may not be both ``no_op`` and ``replace_with_linear`` (assert);
* attention: ``no_op`` or ``replace_with_linear`` clear ``n_heads_in_group`` (and the window
  and sink fields) to None; otherwise ``n_heads_in_group`` must be given (assert);
* ffn: ``no_op`` or ``replace_with_linear`` clear ``ffn_mult`` to None; otherwise it must be
  given (assert) and is rounded to 6 decimals;
* ``intermediate_size`` and ``num_key_value_heads`` set to None (past transformers 5's strict
  LlamaConfig fields, which the remote class predates); ``len(block_configs) ==
  num_hidden_layers`` (assert).
"""
from types import SimpleNamespace

from transformers import AutoConfig, LlamaConfig

MODEL_TYPE = "nemotron-nas"


def _sub(d, kind):
    d = dict(d)
    no_op, linear = bool(d.get("no_op", False)), bool(d.get("replace_with_linear", False))
    assert not (no_op and linear), f"{kind}: no_op and replace_with_linear"
    d.update(no_op=no_op, replace_with_linear=linear)
    if kind == "attention":
        for key in ("n_heads_in_group", "window_length", "num_sink_tokens"):
            d.setdefault(key, None)
            if no_op or linear:
                d[key] = None
        if not (no_op or linear):
            assert d["n_heads_in_group"] is not None, "attention: n_heads_in_group missing"
    else:
        d.setdefault("ffn_mult", None)
        if no_op or linear:
            d["ffn_mult"] = None
        else:
            assert d["ffn_mult"] is not None, "ffn: ffn_mult missing"
            d["ffn_mult"] = round(d["ffn_mult"], 6)
    return SimpleNamespace(**d)


def block(d):
    if not isinstance(d, dict):
        return d
    return SimpleNamespace(attention=_sub(d["attention"], "attention"),
                           ffn=_sub(d["ffn"], "ffn"))


class DeciLMConfig(LlamaConfig):
    model_type = MODEL_TYPE

    def __init__(self, block_configs=None, **kwargs):
        for key in ("intermediate_size", "num_key_value_heads"):
            if kwargs.get(key, 0) is None:      # (LlamaConfig is strict: an int or absent)
                del kwargs[key]
        super().__init__(**kwargs)
        # (the remote class's None past LlamaConfig's strict field types)
        object.__setattr__(self, "intermediate_size", None)
        object.__setattr__(self, "num_key_value_heads", None)
        if block_configs is not None:
            block_configs = [block(d) for d in block_configs]
            assert len(block_configs) == self.num_hidden_layers
        self.block_configs = block_configs

    def to_dict(self):
        out = super().to_dict()
        if self.block_configs is not None:
            out["block_configs"] = [{"attention": vars(b.attention), "ffn": vars(b.ffn)}
                                    for b in self.block_configs]
        return out


def register():
    AutoConfig.register(MODEL_TYPE, DeciLMConfig, exist_ok=True)
