"""`--speculative-config`'s own `max_model_len` against what vLLM 0.33 does with it
(tests/data/draft_max_len/spec_max_len.json, recorded by record_spec_len.py there): ngram reads
it no further (the draft is the target), so kvcli accepts it and changes nothing; an EAGLE /
MTP draft's is checked against the draft's config and the target's length and lowers the
target's max_model_len only where the draft's RoPE does more than size its cache, which kvcli
does not model: refused in one line saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvcli.app import app
from kvcore.engine.spec_config import speculative_settings
from kvcore.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
RECORD = json.loads((ROOT / "tests" / "data" / "draft_max_len" / "spec_max_len.json").read_text())
TRACE = str(ROOT / "traces" / "shared-prefix.jsonl")


def _cases(**match) -> list[dict]:
    return [c for c in RECORD["cases"] if all(c[k] == v for k, v in match.items())]


def test_vllm_reads_ngrams_key_no_further():
    ran = [c for c in _cases(method="ngram") if "refused" not in c]
    assert len(ran) == 11      # (every value but 0; true is 1 to pydantic)
    assert all(c["target_after"] == c["target_before"] == (c["max_model_len"] or 131072)
               and c["logs"] == [] for c in ran)
    assert _cases(method="ngram", spec_max_model_len=0)[0]["refused"] == (
        "ValidationError: Input should be greater than or equal to 1")
    for x in (1024, 200000):
        assert speculative_settings(json.dumps({"method": "ngram", "num_speculative_tokens": 3,
                                                "max_model_len": x})) == {
            "spec_method": "ngram", "num_speculative_tokens": 3}
    with pytest.raises(InputError, match="max_model_len must be an integer >= 1, got 0"):
        speculative_settings('{"method": "ngram", "num_speculative_tokens": 3, '
                             '"max_model_len": 0}')


def test_an_eagle_drafts_key_lowers_the_target_only_past_a_cache_only_rope():
    """What kvcli would have to model: default-2048 (cache-only RoPE) leaves the target at
    131,072 with the key at 1,024; yarn-8192 lowers it to 1,024 with vLLM's warning; a key
    above the draft config's 8,192 or the target's 4,096 is refused."""
    shared = _cases(draft="default-2048", max_model_len=None, spec_max_model_len=1024)[0]
    assert (shared["target_after"], shared["draft_max_model_len"]) == (131072, 1024)
    lowered = _cases(draft="yarn-8192", max_model_len=None, spec_max_model_len=1024)[0]
    assert lowered["target_after"] == 1024 and lowered["logs"] == [
        ("The draft model's max_model_len (1024) is smaller than the target model's (131072) "
         "and the V2 model runner can't skip speculation for longer sequences; reducing "
         "max_model_len to 1024.")]
    assert _cases(draft="yarn-8192", max_model_len=4096, spec_max_model_len=8192)[0][
        "refused"].startswith("ValidationError: Value error, speculative_max_model_len=8192 "
                              "cannot be larger than target_max_model_len=4096")
    assert "User-specified max_model_len (200000) is greater than the derived max_model_len " \
        "(max_position_embeddings=8192.0" in _cases(draft="yarn-8192", max_model_len=None,
                                                     spec_max_model_len=200000)[0]["refused"]


@pytest.mark.parametrize("method", ["eagle", "eagle3", "mtp"])
def test_an_eagle_or_mtp_drafts_key_is_refused_in_one_line(method: str):
    spec = json.dumps({"method": method, "num_speculative_tokens": 2, "max_model_len": 1024})
    r = CliRunner().invoke(app, ["replay", TRACE, "--speculative-config", spec])
    assert (r.exit_code, r.stdout, r.stderr.count("\n")) == (2, "", 1)
    assert r.stderr == (
        f"error: option --speculative-config: max_model_len (the draft's) is not modelled for "
        f"{method}: vLLM refuses one above the draft config's derived length or the target's "
        "max_model_len, and lowers the target's max_model_len to it only where the draft's RoPE "
        "does more than size its cache (YaRN, dynamic); leave the key out and give that length "
        "as --max-model-len\n")


def test_ngrams_key_changes_nothing_in_a_replay():
    base = ["replay", TRACE, "--json", "--spec-acceptance-rate", "0.5"]
    plain = CliRunner().invoke(app, [*base, "--spec-method", "ngram", "--spec-tokens", "3"])
    keyed = CliRunner().invoke(app, [*base, "--speculative-config", json.dumps(
        {"method": "ngram", "num_speculative_tokens": 3, "max_model_len": 64})])
    assert plain.exit_code == keyed.exit_code == 0, keyed.output
    a, b = json.loads(plain.stdout), json.loads(keyed.stdout)
    for d in (a, b):
        d.pop("wall_time_s")
    assert a == b and a["steps"] > 0
