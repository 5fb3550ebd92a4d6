"""kvcore: a readable, block-for-block re-implementation of vLLM 0.33's V1 KV cache stack.

Pure Python (+ numpy for analysis). Layers, ground first (a layer imports only layers below it):
blocks / hashing / specs -> block pool, managers, coordinators, KVCacheManager -> engine
(traces, scheduler, replay, events) -> analysis (stats, curves).
"""

__version__ = "0.1.0"
