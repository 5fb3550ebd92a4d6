"""The limits a trace line is held to: a request's tokens, its arrival time, its arrival step.
Past each, what the replay would do with the line is wrong or takes the machine (each says how),
so the line is refused naming its field."""

from __future__ import annotations

# The most tokens one request may have, prompt or output: 10 million, the longest context of any
# model released (Llama 4 Scout; real traces stay under 200k). A request's prompt becomes token
# ids in memory (about 40 bytes a token) when it is replayed, so a line beyond this could take
# the machine's memory (a 10 MB line of 1.3M hash ids of 512 tokens is 666M tokens, 27 GB).
MAX_REQUEST_TOKENS = 10_000_000
# Arrival times in ms, at most 10^13 (about 317 years; Unix times in ms are 1.7e12): there a
# float still holds microseconds. At 10^20 ms a 5 ms step added to the clock left it unchanged
# (a cluster's metrics clock never moved on: it hung), and every latency would have read 0.
MAX_TIMESTAMP_MS = 1e13
# Arrival steps (`--arrivals step`), at most 2^53: the step lines and events carry every step
# after it, exact in a JSON reader that holds numbers as doubles (jq, JavaScript) only below
# 2^53. An arrival_step of 10^20 raised OverflowError (a traceback) in the trace survey's
# int64 array, and one of 2^63 - 1 in `kvcli stats`' step columns a few steps later.
MAX_ARRIVAL_STEP = 1 << 53
