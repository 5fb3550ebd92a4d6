"""vLLM 0.33's answer for K speculative tokens on a target with several MTP modules
(`SpeculativeConfig` as the mtpmulti censuses record it) against kvcli's draft, shared by
tests/test_mtpmulti.py and tests/test_mtpmulti2.py."""

from __future__ import annotations

import pytest

from kvcore.errors import InputError
from kvcore.models.drafts import load_spec_draft
from kvcore.models.geometry import ModelGeometry


def assert_k_rule(rec: dict, target: ModelGeometry, k: int) -> None:
    """K above n not a multiple of n: vLLM's refusal in its words; multi-module MTP (K >= 2):
    refused, saying so; else K 1 sized with the n modules. (Named "t" by the caller.)"""
    n = target.mtp_layers
    if "refused" in rec:
        words = f"num_speculative_tokens:{k} must be divisible by n_predict={n}"
        assert words in rec["refused"]
        with pytest.raises(InputError) as e:
            load_spec_draft(None, "mtp", target, k)
        assert e.value.message == (f"mtp with t: it has {n} MTP modules: vLLM 0.33 refuses "
                                   f"K {k}, '{words}'")
    elif rec["use_multi_module_mtp"]:
        with pytest.raises(InputError) as e:
            load_spec_draft(None, "mtp", target, k)
        assert e.value.message.startswith(f"mtp with t: it has {n} MTP modules: vLLM 0.33 "
                                          f"builds {n} draft layers and with K >= 2 runs "
                                          "multi-module MTP")
        assert e.value.message.endswith(f"(K 1 is sized: {n} modules, one step each)")
    else:
        assert k == 1 and len(load_spec_draft(None, "mtp", target, k).geometry.layer_kinds) == n
