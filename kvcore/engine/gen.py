"""`kvcli gen`: synthetic traces with a known structure, in the Mooncake format (hash ids with a
`block_size` field), so they are small and replay at any engine block size.

* `shared_prefix`: G groups of P prompts; each prompt is the group's system prompt (S tokens)
  followed by a unique question (Q tokens) — SGLang's generated-shared-prefix benchmark.
  Infinite-cache token hit rate (no last-token cap): G*(P-1)*S / (G*P*(S+Q)).
* `multiturn`: C conversations of T turns; turn k's prompt is turn k-1's prompt, its answer and a
  new user message (every conversation opens with a system prompt shared by all of them). Turns
  follow each other after the answer plus a think time; conversations start as a Poisson process.

Content model: every conversation (or group) is one token stream; block j of a prompt that is a
full block of the stream gets the stream's id for block j, so a later turn that contains it has
the same id; a prompt's last partial block gets a fresh id (its content differs from the full
block a later turn will have there).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(slots=True)
class _Ids:
    next: int = 0

    def take(self, n: int) -> list[int]:
        out = list(range(self.next, self.next + n))
        self.next += n
        return out


def _blocks(stream: list[int], length: int, bs: int, ids: _Ids) -> list[int]:
    """Hash ids of the first `length` tokens of a stream whose full blocks have ids `stream`."""
    full, rest = divmod(length, bs)
    out = stream[:full]
    if rest:
        out = out + ids.take(1)
    return out


def _arrivals(rng: random.Random, n: int, rate: float) -> list[float]:
    t, out = 0.0, []
    for _ in range(n):
        out.append(t)
        t += rng.expovariate(rate) if rate > 0 else 0.0
    return out


def shared_prefix(*, groups: int = 8, prompts_per_group: int = 16, system_tokens: int = 1024,
                  question_tokens: int = 128, output_tokens: int = 128, block_size: int = 16,
                  rate: float = 4.0, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    ids = _Ids()
    bs = block_size
    total = system_tokens + question_tokens
    recs = []
    for _g in range(groups):
        sys_stream = ids.take(system_tokens // bs)
        for _p in range(prompts_per_group):
            # The system prompt's full blocks are shared; everything after is unique content.
            n_sys_full = system_tokens // bs
            stream = sys_stream + ids.take(-(-total // bs) - n_sys_full)
            recs.append({"input_length": total, "output_length": output_tokens,
                         "block_size": bs, "hash_ids": stream[: -(-total // bs)]})
    rng.shuffle(recs)
    for r, t in zip(recs, _arrivals(rng, len(recs), rate)):
        r["timestamp"] = round(t * 1000.0, 3)
    return [{"timestamp": r["timestamp"], **{k: v for k, v in r.items() if k != "timestamp"}}
            for r in recs]


def multiturn(*, conversations: int = 40, turns: int = 5, system_tokens: int = 512,
              user_tokens: int = 200, output_tokens: int = 150, block_size: int = 16,
              rate: float = 0.5, think_time_s: float = 20.0, decode_ms_per_token: float = 20.0,
              seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    ids = _Ids()
    bs = block_size
    shared_system = ids.take(system_tokens // bs)   # every conversation opens with it
    recs = []
    starts = _arrivals(rng, conversations, rate)
    for c in range(conversations):
        n_turns = max(1, int(rng.triangular(1, turns * 2 - 1, turns)))
        # One token stream per conversation; its full blocks get ids as it grows.
        stream_len = system_tokens
        stream = list(shared_system[: system_tokens // bs])
        t = starts[c]
        for _k in range(n_turns):
            user = max(1, int(rng.gauss(user_tokens, user_tokens / 3)))
            prompt_len = stream_len + user
            need_full = prompt_len // bs
            if len(stream) < need_full:
                stream += ids.take(need_full - len(stream))
            out = max(1, int(rng.gauss(output_tokens, output_tokens / 3)))
            recs.append({"timestamp": round(t * 1000.0, 3), "input_length": prompt_len,
                         "output_length": out, "block_size": bs,
                         "hash_ids": _blocks(stream, prompt_len, bs, ids),
                         "conversation": c})
            # The next turn contains this prompt and its answer.
            stream_len = prompt_len + out
            need_full = stream_len // bs
            if len(stream) < need_full:
                stream += ids.take(need_full - len(stream))
            t += out * decode_ms_per_token / 1000.0 + rng.expovariate(1.0 / think_time_s)
    recs.sort(key=lambda r: r["timestamp"])
    return recs


GENERATORS = {"shared-prefix": shared_prefix, "multiturn": multiturn}
