"""Block hashing: kvcore's bytes equal vLLM 0.33's (answers recorded from the real vLLM through
the oracle's environment: tests/data/oracle_fresh/vllm_hash_answers.json)."""

from __future__ import annotations

import json
import pickle
from hashlib import sha256 as _sha256
from pathlib import Path

import pytest

from kvcore.hashing import (
    BlockHasher,
    generate_block_hash_extra_keys,
    get_hash_fn_by_name,
    hash_block_tokens,
    none_hash,
    to_event_extra_keys,
)
from kvcore.request import LoRARequest, MultiModalFeature, Request

VLLM = json.loads((Path(__file__).parent / "data" / "oracle_fresh" /
                   "vllm_hash_answers.json").read_text())
C3 = [0] * 16 + [1] * 16 + [2] * 16
FUNCS = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")


def _json(x):
    return json.loads(json.dumps(x))


@pytest.mark.parametrize("name", FUNCS)
def test_none_hash_is_hash_of_the_fixed_seed_for_every_function(name):
    fn = get_hash_fn_by_name(name)
    assert none_hash(fn).hex() == VLLM[f"none_{name}"]
    assert BlockHasher(4, name).none_hash.hex() == VLLM[f"none_{name}"]
    assert len(none_hash(fn)) == (32 if name.startswith("sha") else 16)


@pytest.mark.parametrize("name", FUNCS)
def test_chained_hashes_equal_vllm(name):
    req = Request("r", list(range(10)), BlockHasher(4, name))
    # 10 tokens at block size 4: two full blocks; the partial third is not hashed.
    assert [h.hex() for h in req.block_hashes] == VLLM[f"chain_{name}"]
    seeded = Request("r", list(range(10)), BlockHasher(4, name, seed="my seed"))
    assert [h.hex() for h in seeded.block_hashes] == VLLM[f"chain_seed_{name}"]
    assert seeded.block_hashes != req.block_hashes


def test_pythonhashseed_is_ignored(monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "123")
    assert BlockHasher(4, "xxhash").none_hash.hex() == VLLM["none_xxhash"]


def test_hash_block_tokens_is_hash_of_the_triple():
    fn = get_hash_fn_by_name("sha256")
    nh = none_hash(fn)
    h0 = hash_block_tokens(fn, None, [1, 2, 3], none_hash_value=nh)
    assert h0 == _sha256(pickle.dumps((nh, (1, 2, 3), None),
                                      protocol=pickle.HIGHEST_PROTOCOL)).digest()
    h1 = hash_block_tokens(fn, h0, (4, 5, 6), ("x",), none_hash_value=nh)
    assert h1 == fn((h0, (4, 5, 6), ("x",)))


def test_unknown_hash_name():
    with pytest.raises(ValueError, match="Unsupported hash function: 'md5'"):
        get_hash_fn_by_name("md5")


def test_s14_multimodal_tagged_keys_equal_vllm():
    """S14: images aaa [11,21), bbb [30,48), ccc [48,55) in a 59-token prompt."""
    toks = [i % 7 for i in range(59)]
    mm = [MultiModalFeature("aaa", 11, 10), MultiModalFeature("bbb", 30, 18),
          MultiModalFeature("ccc", 48, 7)]
    req = Request("r", toks, BlockHasher(16), mm_features=mm)
    assert [h.hex() for h in req.block_hashes] == VLLM["s14_prompt"]
    assert len(req.block_hashes) == 3
    # 5 decode tokens fill block 3 (tokens 48-63): it gets hashed, with the ccc key.
    for _ in range(5):
        req.append_output_token_ids(8)
    assert [h.hex() for h in req.block_hashes] == VLLM["s14_after_decode"]
    keys = [generate_block_hash_extra_keys(req, s, s + 16, 0)[0] for s in (0, 16, 32, 48)]
    assert keys == [(("mm", "aaa", 11),), (("mm", "aaa", -5), ("mm", "bbb", 14)),
                    (("mm", "bbb", -2),), (("mm", "ccc", 0),)]
    assert _json(keys) == VLLM["s14_extra"]
    assert _json(to_event_extra_keys(keys)) == VLLM["s14_event_extra"]


def test_extra_key_windows_equal_vllm():
    req = Request("r", list(range(20)), None, mm_features=[MultiModalFeature("hash1", 0, 5),
                                                            MultiModalFeature("hash2", 10, 5)])
    for k, v in VLLM["windows"].items():
        a, b, i = map(int, k.split(","))
        assert _json(list(generate_block_hash_extra_keys(req, a, b, i))) == v, k


def test_mm_item_spanning_blocks_keys_all_of_them():
    req = Request("r", list(range(40)), BlockHasher(8),
                  mm_features=[MultiModalFeature("big", 2, 30)])
    assert [h.hex() for h in req.block_hashes] == VLLM["span_blocks"]


def test_s15_cache_salt_only_on_the_first_block():
    def hashes(salt):
        return [h.hex() for h in Request("r", C3 + [3] * 11, BlockHasher(16),
                                         cache_salt=salt).block_hashes]
    s1, s2, none = hashes("salt1"), hashes("salt2"), hashes(None)
    assert s1 == VLLM["s15_salt1"] and s2 == VLLM["s15_salt2"] and none == VLLM["s15_nosalt"]
    # The salt keys only block 0, but the chain carries it into every later block.
    assert all(a != b for a, b in zip(s1, s2)) and all(a != b for a, b in zip(s1, none))
    req = Request("r", C3, None, cache_salt="salt1")
    assert generate_block_hash_extra_keys(req, 0, 16, 0)[0] == (("cache_salt", "salt1"),)
    assert generate_block_hash_extra_keys(req, 16, 32, 0)[0] is None


def test_lora_and_salt_order_and_event_form():
    lora = LoRARequest("sql", 42, "/adapters/sql")
    req = Request("r", C3, BlockHasher(16), lora_request=lora, cache_salt="s")
    assert [h.hex() for h in req.block_hashes] == VLLM["lora_salt"]
    keys = [generate_block_hash_extra_keys(req, s, s + 16, 0)[0] for s in (0, 16)]
    assert keys == [(("lora", "sql", "/adapters/sql"), ("cache_salt", "s")),
                    (("lora", "sql", "/adapters/sql"),)]
    assert _json(to_event_extra_keys(keys)) == VLLM["lora_salt_event_extra"] == [["sql", "s"],
                                                                                  ["sql"]]


def test_incremental_hashing_of_decode_tokens():
    hasher = BlockHasher(4)
    req = Request("r", [1, 2, 3, 4, 5, 6], hasher)
    assert len(req.block_hashes) == 1
    req.append_output_token_ids(7)
    assert len(req.block_hashes) == 1
    req.append_output_token_ids([8, 9, 10, 11, 12])
    # 12 tokens: three blocks, the same chain as hashing the 12 tokens at once.
    assert req.block_hashes == Request("s", list(range(1, 13)), hasher).block_hashes
