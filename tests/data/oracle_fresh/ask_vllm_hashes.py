# Dev tool, run once with the oracle's interpreter (~/.cache/vllm-oracle/venv/bin/python):
# asks the real vLLM 0.33 for the block hashes of tagged extra-key cases; its output is
# vllm_hash_answers.json, which tests/test_hashing.py asserts against.
import json
import os
import sys

sys.path.insert(0, os.path.expanduser("~/.cache/vllm-oracle/src"))
os.environ.pop("PYTHONHASHSEED", None)
from types import SimpleNamespace as NS

from vllm.utils import hashing as vh
from vllm.v1.core import kv_cache_utils as ku


def req(tokens, mm=(), lora=None, salt=None):
    feats = [NS(identifier=i, mm_position=NS(offset=o, length=l)) for i, o, l in mm]
    r = NS(all_token_ids=list(tokens), mm_features=feats, lora_request=lora, cache_salt=salt,
           prompt_embeds=None, block_hashes=[], _prompt_embeds_per_block_hashes={})
    r.num_tokens = len(tokens)
    return r

out = {}
for name in ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"):
    fn = vh.get_hash_fn_by_name(name)
    ku.NONE_HASH = fn("vllm-none-hash")
    out[f"none_{name}"] = ku.NONE_HASH.hex()
    hasher = ku.get_request_block_hasher(4, fn)
    r = req(range(10))
    out[f"chain_{name}"] = [h.hex() for h in hasher(r)]
    ku.NONE_HASH = fn("my seed")
    out[f"chain_seed_{name}"] = [h.hex() for h in hasher(req(range(10)))]
fn = vh.sha256
ku.NONE_HASH = fn("vllm-none-hash")
h16 = ku.get_request_block_hasher(16, fn)
# S14: 59 tokens, images aaa [11,21), bbb [30,48), ccc [48,55); then 5 decode tokens [8]*5
toks = [i % 7 for i in range(59)]
mm = [("aaa", 11, 10), ("bbb", 30, 18), ("ccc", 48, 7)]
r = req(toks, mm)
r.block_hashes = h16(r)
out["s14_prompt"] = [h.hex() for h in r.block_hashes]
r.all_token_ids += [8] * 5; r.num_tokens += 5
r.block_hashes += h16(r)
out["s14_after_decode"] = [h.hex() for h in r.block_hashes]
out["s14_extra"] = [ku.generate_block_hash_extra_keys(r, s, s + 16, 0)[0] for s in (0, 16, 32, 48)]
out["s14_event_extra"] = ku.to_event_extra_keys(out["s14_extra"])
# S15: cache salt
C3 = [0] * 16 + [1] * 16 + [2] * 16
r = req(C3 + [3] * 11, salt="salt1"); out["s15_salt1"] = [h.hex() for h in h16(r)]
r = req(C3 + [3] * 11, salt="salt2"); out["s15_salt2"] = [h.hex() for h in h16(r)]
r = req(C3 + [3] * 11); out["s15_nosalt"] = [h.hex() for h in h16(r)]
# LoRA (name, path) and salt together
lora = NS(lora_name="sql", lora_path="/adapters/sql", adapter_id=42, name="sql", lora_int_id=42)
r = req(C3, lora=lora, salt="s"); out["lora_salt"] = [h.hex() for h in h16(r)]
out["lora_salt_extra"] = [ku.generate_block_hash_extra_keys(r, s, s + 16, 0)[0] for s in (0, 16)]
out["lora_salt_event_extra"] = ku.to_event_extra_keys(out["lora_salt_extra"])
# The reference's extra-keys windows example (mm at [0,5) hash1 and [10,15) hash2)
r = req(range(20), [("hash1", 0, 5), ("hash2", 10, 5)])
out["windows"] = {f"{a},{b},{i}": ku.generate_block_hash_extra_keys(r, a, b, i) for a, b, i in
                  [(0, 5, 0), (3, 8, 0), (6, 10, 1), (0, 15, 0), (5, 10, 1), (10, 15, 1)]}
# an item spanning several blocks (incremental, start > 0)
r = req(list(range(40)), [("big", 2, 30)])
r.block_hashes = ku.get_request_block_hasher(8, fn)(r)
out["span_blocks"] = [h.hex() for h in r.block_hashes]
print(json.dumps(out, default=list))
