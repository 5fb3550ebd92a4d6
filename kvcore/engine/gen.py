"""`kvcli gen`: synthetic traces with a known structure, in the Mooncake format (hash ids with a
`block_size` field), so they are small and replay at any engine block size.

* `shared_prefix`: G groups of P prompts; each prompt is the group's system prompt (S tokens)
  followed by a unique question (Q tokens) — SGLang's generated-shared-prefix benchmark.
  Infinite-cache token hit rate (no last-token cap): G*(P-1)*S' / (G*P*(S+Q)), S' =
  floor(S / block_size) * block_size (only the system prompt's full blocks are shared).
* `multiturn`: C conversations of about T turns (a triangular draw on 1 .. 2T-1 with mode T,
  rounded down: a mean of about T - 0.5; the shipped samples were made so); turn k's prompt is
  turn k-1's prompt, its answer and a new user message (every conversation opens with a system
  prompt shared by all of them). Turns follow each other after the answer plus a think time;
  conversations start as a Poisson process.

Content model: every conversation (or group) is one token stream; block j of a prompt that is a
full block of the stream gets the stream's id for block j, so a later turn that contains it has
the same id; a prompt's last partial block gets a fresh id (its content differs from the full
block a later turn will have there).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from kvcore.errors import InputError
from kvcore.traces.formats import MAX_REQUEST_TOKENS, MAX_TIMESTAMP_MS

# The most requests one call writes (each is a few hundred bytes of JSON, and all are held to
# sort them): 10 million, a trace of a few GB.
MAX_REQUESTS = 10_000_000
# Every record holds its hash ids until the trace is written; 100 million of them is a few GB
# of memory and well under a GB of JSON; past it the caller would run out of memory first
# (shared-prefix with a 1M-token system prompt was a MemoryError traceback).
MAX_TRACE_BLOCKS = 100_000_000


def _ints(**values: tuple[int, int]) -> None:
    """Counts and token lengths, `name=(value, minimum)`, each at most a request's token limit
    (a count more is caught by the totals); an `InputError` naming the option."""
    for name, (v, lo) in values.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"must be an integer, got {v!r}", field=name)
        if v < lo:
            raise InputError(f"must be >= {lo}, got {v}", field=name)
        if v > MAX_REQUEST_TOKENS:
            raise InputError(f"must be at most {MAX_REQUEST_TOKENS:,}, got {v:,}", field=name)


def _float(name: str, v: float, *, positive: bool) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (
            v <= 0 if positive else v < 0):
        raise InputError(f"must be a finite number {'>' if positive else '>='} 0, got {v!r}",
                         field=name)


def _at_most(what: str, n: int, limit: int, field: str) -> None:
    if n > limit:
        raise InputError(f"{what} {n:,} is more than the limit of {limit:,}", field=field)


def _check_last_arrival(last_ms: float, field: str) -> None:
    """The trace's last arrival within what the replay reads (`MAX_TIMESTAMP_MS`): a rate of
    1e-300 (or a think time of 1e300 s) wrote timestamps of 1e302 ms, exit 0, into a trace
    every command then refused."""
    if last_ms > MAX_TIMESTAMP_MS:
        raise InputError(f"the last request would arrive at {last_ms:.6g} ms, past the limit "
                         f"of {MAX_TIMESTAMP_MS:.0e} ms a trace's timestamps have (about 317 "
                         "years)", field=field)


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
        t += rng.expovariate(rate)
    return out


def shared_prefix(*, groups: int = 8, prompts_per_group: int = 16, system_tokens: int = 1024,
                  question_tokens: int = 128, output_tokens: int = 128, block_size: int = 16,
                  rate: float = 4.0, seed: int = 0) -> list[dict]:
    _ints(groups=(groups, 1), prompts_per_group=(prompts_per_group, 1),
          system_tokens=(system_tokens, 0), question_tokens=(question_tokens, 1),
          output_tokens=(output_tokens, 1), block_size=(block_size, 1))
    _float("rate", rate, positive=True)
    _at_most("groups x prompts_per_group =", groups * prompts_per_group, MAX_REQUESTS,
             "groups" if groups > prompts_per_group else "prompts_per_group")
    _at_most("system_tokens + question_tokens =", system_tokens + question_tokens,
             MAX_REQUEST_TOKENS, "system_tokens")
    _at_most("the trace's block count", groups * prompts_per_group * -(-(system_tokens
             + question_tokens) // block_size), MAX_TRACE_BLOCKS, "prompts_per_group")
    rng = random.Random(seed)
    ids = _Ids()
    bs = block_size
    total = system_tokens + question_tokens
    recs: list[dict[str, Any]] = []
    for _g in range(groups):
        sys_stream = ids.take(system_tokens // bs)
        for _p in range(prompts_per_group):
            # The system prompt's full blocks are shared; everything after is unique content.
            n_sys_full = system_tokens // bs
            stream = sys_stream + ids.take(-(-total // bs) - n_sys_full)
            recs.append({"input_length": total, "output_length": output_tokens,
                         "block_size": bs, "hash_ids": stream[: -(-total // bs)]})
    rng.shuffle(recs)
    times = _arrivals(rng, len(recs), rate)
    _check_last_arrival(times[-1] * 1000.0, "rate")
    for r, t in zip(recs, times):
        r["timestamp"] = round(t * 1000.0, 3)
    return [{"timestamp": r["timestamp"], **{k: v for k, v in r.items() if k != "timestamp"}}
            for r in recs]


def multiturn(*, conversations: int = 40, turns: int = 5, system_tokens: int = 512,
              user_tokens: int = 200, output_tokens: int = 150, block_size: int = 16,
              rate: float = 0.5, think_time_s: float = 20.0, decode_ms_per_token: float = 20.0,
              seed: int = 0) -> list[dict]:
    _ints(conversations=(conversations, 1), turns=(turns, 1),
          system_tokens=(system_tokens, 0), user_tokens=(user_tokens, 1),
          output_tokens=(output_tokens, 1), block_size=(block_size, 1))
    _float("rate", rate, positive=True)
    _float("think_time_s", think_time_s, positive=False)
    _float("decode_ms_per_token", decode_ms_per_token, positive=False)
    # A conversation has up to 2*turns - 1 turns (triangular); its last prompt holds every
    # earlier message and answer, which the Gaussian draws rarely make longer than twice
    # their means.
    most_turns = 2 * turns - 1
    _at_most("conversations x (2 x turns - 1) =", conversations * most_turns, MAX_REQUESTS,
             "turns" if most_turns > conversations else "conversations")
    _at_most("a last prompt of about system_tokens + (2 x turns - 1) x 2 x (user_tokens + "
             "output_tokens) =", system_tokens + most_turns * 2 * (user_tokens + output_tokens),
             MAX_REQUEST_TOKENS, "turns")
    # a conversation of n turns holds about n system prompts and n^2 / 2 messages and
    # answers; n is about `turns` (the triangular draw's mode): refused before the work, and
    # the exact count is checked as the trace grows
    # (grown by turns squared: --turns 1000 was blamed on --conversations)
    _at_most("the trace's block count of about", conversations * (
        turns * system_tokens + turns * turns * (user_tokens + output_tokens) // 2) // block_size,
        MAX_TRACE_BLOCKS, "turns" if turns > conversations else "conversations")
    total_blocks = 0
    rng = random.Random(seed)
    ids = _Ids()
    bs = block_size
    shared_system = ids.take(system_tokens // bs)   # every conversation opens with it
    recs: list[dict[str, Any]] = []
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
            total_blocks += len(recs[-1]["hash_ids"])
            _at_most("the trace's block count", total_blocks, MAX_TRACE_BLOCKS, "conversations")
            # The next turn contains this prompt and its answer.
            stream_len = prompt_len + out
            need_full = stream_len // bs
            if len(stream) < need_full:
                stream += ids.take(need_full - len(stream))
            think = rng.expovariate(1.0 / think_time_s) if think_time_s > 0 else 0.0
            t += out * decode_ms_per_token / 1000.0 + think
    recs.sort(key=lambda r: r["timestamp"])
    # (the conversations' starts, else their turns' think times, took it that far)
    _check_last_arrival(recs[-1]["timestamp"],
                        "rate" if starts[-1] * 1000.0 > MAX_TIMESTAMP_MS else "think_time_s")
    return recs
