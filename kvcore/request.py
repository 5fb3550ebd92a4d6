"""`Request`: the scheduler's view of one request, as much of vLLM's `v1/request.py` as the KV
cache stack reads.

It holds the token ids (prompt, then appended outputs), the chained ``block_hashes`` of every
full block (kept up to date by the `BlockHasher` on creation and on every appended token, so
blocks filled by decode tokens are hashed too), ``num_computed_tokens``, status, priority,
arrival time, and the inputs of extra hash keys (LoRA, multimodal items, cache salt).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class RequestStatus(enum.IntEnum):
    WAITING = 0
    RUNNING = 1
    PREEMPTED = 2
    FINISHED_STOPPED = 3
    FINISHED_LENGTH_CAPPED = 4
    FINISHED_ABORTED = 5
    # Admitted with an async KV load (a CPU offload tier) and waiting for it; not finished.
    WAITING_FOR_REMOTE_KVS = -1

    @property
    def is_finished(self) -> bool:
        return self >= RequestStatus.FINISHED_STOPPED


@dataclass(frozen=True, slots=True)
class LoRARequest:
    """A LoRA adapter: its name and path enter every block hash (0.33's tagged key). vLLM's
    `adapter_id` and `name` properties are its `lora_int_id` and `lora_name`, which kvcli reads
    directly (a BlockStored event's `lora_id` and `lora_name`)."""

    lora_name: str
    lora_int_id: int
    lora_path: str = ""


@dataclass(frozen=True, slots=True)
class MultiModalFeature:
    """One multimodal item: its content identifier and the token span it occupies."""

    identifier: str
    offset: int
    length: int


class TokenSource(Protocol):
    """A prompt whose token ids are computed on demand (`kvcore.traces.request.HashIdTokens`)."""

    def tokens(self, start: int, end: int, step: int = 1) -> list[int]:
        """The token ids at positions ``range(start, end, step)`` (0 <= start, end <= length)."""
        ...


class Request:
    __slots__ = (
        "__weakref__",
        "_block_hasher",
        "_hash_block_size",
        "_outputs",
        "_prompt",
        "_source",
        "_tokens",
        "arrival_time",
        "block_hashes",
        "cache_salt",
        "decode_window_end",
        "decode_window_start",
        "is_prefill_chunk",
        "lora_request",
        "max_tokens",
        "mm_features",
        "num_cached_tokens",
        "num_computed_tokens",
        "num_in_flight_tokens",
        "num_output_placeholders",
        "num_preemptions",
        "num_prompt_tokens",
        "num_spec_tokens",
        "num_stale_output_tokens",
        "num_tokens",
        "priority",
        "request_id",
        "session_id",
        "shared_prefix_boundary",
        "skip_reading_prefix_cache",
        "status",
    )

    def __init__(self, request_id: str, prompt_token_ids: list[int] | None,
                 block_hasher: Callable[[Request], list[bytes]] | None = None, *,
                 arrival_time: float = 0.0, priority: int = 0, max_tokens: int | None = None,
                 lora_request: LoRARequest | None = None, cache_salt: str | None = None,
                 mm_features: list[MultiModalFeature] | None = None,
                 skip_reading_prefix_cache: bool = False, session_id: str | None = None,
                 prompt_source: TokenSource | None = None,
                 num_prompt_tokens: int = 0) -> None:
        """``prompt_token_ids``, or ``prompt_source`` with ``num_prompt_tokens`` (and None).

        With a source the token list is built only when someone reads `all_token_ids`; the
        hashers, the events and `token_ids` read slices of it without building it. Why: a
        Mooncake prompt is 12,000 tokens on average, and building every prompt's list of ints
        (and freeing it) was 10-15% of a replay of the conversation trace, for lists that the
        stack never reads whole.
        """
        self.request_id = request_id
        self._prompt = prompt_token_ids
        self._source = prompt_source
        self._outputs: list[int] = []
        self._tokens: list[int] | None = None
        if prompt_token_ids is not None:
            self._tokens = list(prompt_token_ids)
            self.num_prompt_tokens = len(prompt_token_ids)
        else:
            assert prompt_source is not None, "a request needs its prompt's tokens or source"
            self.num_prompt_tokens = num_prompt_tokens
        # An attribute, not a property: read on every manager call.
        self.num_tokens = self.num_prompt_tokens
        self.num_computed_tokens = 0
        self.status = RequestStatus.WAITING
        self.priority = priority
        self.arrival_time = arrival_time
        self.max_tokens = max_tokens
        self.lora_request = lora_request
        self.cache_salt = cache_salt
        self.mm_features = sorted(mm_features, key=lambda f: f.offset) if mm_features else []
        self.num_preemptions = 0
        self.num_cached_tokens = -1  # prefix-hit tokens at first admission (-1: not yet)
        self.skip_reading_prefix_cache = skip_reading_prefix_cache
        # Async scheduling (vLLM's counters; all 0 under sync, where a batch's output is
        # processed before the next schedule): tokens of scheduled batches whose output is not
        # processed yet, sampled tokens in flight, and the in-flight share of a request
        # preempted meanwhile (its output is still delivered, without touching the counters).
        self.num_in_flight_tokens = 0
        self.num_output_placeholders = 0
        self.num_stale_output_tokens = 0
        # Speculative decoding (vLLM's `len(spec_token_ids)`: the drafts the next step verifies;
        # kvcore needs their count only) and vLLM's `is_prefill_chunk`: the last schedule left
        # it short of its known tokens. Both kept only while drafts are on.
        self.num_spec_tokens = 0
        self.is_prefill_chunk = False
        # The block-aligned end of a shared prefix the lookup found that a sparse-retention
        # group (sliding window at retention 0) had not cached: set by the scheduler at each
        # lookup; that group then keeps the window tail ending there (the junction).
        self.shared_prefix_boundary = 0
        self.session_id = session_id
        # kvcore's scheduler: the decode steps it has recorded for this request and not yet
        # applied (`kvcore.engine.decode_windows`); none while start > end.
        self.decode_window_start = 0
        self.decode_window_end = -1
        self._block_hasher = block_hasher
        # Lets append_output_token_ids skip the hasher until a block is full.
        self._hash_block_size = getattr(block_hasher, "block_size", 1)
        self.block_hashes: list[bytes] = []
        if block_hasher is not None:
            self.block_hashes = block_hasher(self)

    @property
    def all_token_ids(self) -> list[int]:
        """Prompt then outputs (built here, once, when the prompt came as a source)."""
        toks = self._tokens
        if toks is None:
            toks = self.token_ids(0, self.num_tokens)
            self._tokens = toks
            self._outputs = []
        return toks

    @property
    def prompt_token_ids(self) -> list[int]:
        if self._prompt is not None:
            return self._prompt
        return self.token_ids(0, self.num_prompt_tokens)

    def token_ids(self, start: int, end: int, step: int = 1) -> list[int]:
        """``all_token_ids[start:end:step]`` for ``0 <= start <= end`` (no negative indices),
        without building the whole list."""
        toks = self._tokens
        if toks is not None:
            return toks[start:end:step]
        n_prompt = self.num_prompt_tokens
        end = min(end, self.num_tokens)
        src = self._source
        assert src is not None
        if start >= end:
            return []
        if end <= n_prompt:
            return src.tokens(start, end, step)
        if start >= n_prompt:
            return self._outputs[start - n_prompt:end - n_prompt:step]
        head = src.tokens(start, n_prompt, step)
        nxt = start + len(head) * step          # the first position past the prompt
        return head + self._outputs[nxt - n_prompt:end - n_prompt:step]

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids(self.num_prompt_tokens, self.num_tokens)

    @property
    def num_output_tokens(self) -> int:
        return self.num_tokens - self.num_prompt_tokens

    def append_output_token_ids(self, token_ids: int | list[int]) -> None:
        """Append sampled token(s); hash every block they complete."""
        toks = self._tokens if self._tokens is not None else self._outputs
        if isinstance(token_ids, int):
            toks.append(token_ids)
            n = self.num_tokens = self.num_tokens + 1
        else:
            toks.extend(token_ids)
            n = self.num_tokens = self.num_tokens + len(token_ids)
        if self._block_hasher is not None and \
                n - len(self.block_hashes) * self._hash_block_size >= self._hash_block_size:
            self.block_hashes.extend(self._block_hasher(self))

    def is_finished(self) -> bool:
        return self.status.is_finished

    def __repr__(self) -> str:
        return (f"Request({self.request_id!r}, tokens={self.num_tokens}, "
                f"computed={self.num_computed_tokens}, status={self.status.name})")
