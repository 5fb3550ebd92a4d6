"""An EAGLE-3 draft config's own keys (kvcore/models/eagle3_keys.py), read beside
`read_hf_config` and so outside its text-key paths: a value vLLM's Eagle3LlamaForCausalLM cannot
build with is refused in one line naming the key by its path in the draft's file. Before, a
number for eagle_config.eagle_aux_hidden_state_layer_ids ('object of type 'int' has no
len()') and a word for target_hidden_size, num_aux_hidden_states or draft_vocab_size ('invalid
literal for int()') ended in tracebacks, and a list for eagle_config was read as none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.models.eagle_draft import load_draft
from kvcore.models.presets import load_preset

TINY = Path(__file__).parent / "data" / "sched_spec_eagle" / "eagle-draft" / "config.json"


IDS = "field 'eagle_config.eagle_aux_hidden_state_layer_ids': must be a list of the target's"


@pytest.mark.parametrize("keys, line", [
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": 5}}, f"{IDS} layer ids, got 5"),
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, "x"]}},
     f"{IDS} layer ids, got [1, 'x']"),
    ({"eagle_config": [1]}, "field 'eagle_config': must be an object, got [1]"),
    ({"target_hidden_size": "abc"},
     "field 'target_hidden_size': must be a positive integer, got 'abc'"),
    ({"num_aux_hidden_states": -1},
     "field 'num_aux_hidden_states': must be a positive integer, got -1"),
    ({"draft_vocab_size": 2.5}, "field 'draft_vocab_size': must be a positive integer, got 2.5"),
])
def test_a_draft_keys_bad_value_is_named_by_its_path(tmp_path: Path, keys: dict,
                                                     line: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(TINY.read_text()), **keys}))
    r = CliRunner().invoke(app, ["config", "llama-3.1-8b", "--gpu-memory-gib", "80",
                                 "--spec-method", "eagle3", "--spec-tokens", "2",
                                 "--spec-model", str(path)])
    assert r.exit_code == 2, r.output
    assert r.stderr == f"error: {path}: {line}\n"


def test_the_keys_read_as_before() -> None:
    # (the tiny draft's fc: 3 aux states of the target's hidden size; its own vocabulary)
    base = json.loads(TINY.read_text())
    draft = load_draft(str(TINY.parent), "eagle3", load_preset("llama-3.1-8b"))
    assert draft.fc_params == 3 * base["hidden_size"] * base["hidden_size"]
    assert draft.lm_head_rows == base.get("draft_vocab_size", base["vocab_size"])
