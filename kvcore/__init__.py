"""kvcore: a readable, block-for-block re-implementation of vLLM 0.33's V1 KV cache stack.

Pure Python (+ numpy for analysis). Layers, ground first (a layer imports only layers below it):
blocks / hashing / specs -> block pool, managers, coordinators, KVCacheManager -> engine
(traces, scheduler, replay, events) -> analysis (stats, curves).
"""

from kvcore import compiled as _compiled

__version__ = "0.1.0"

# The mypyc build of the hot modules, when `make compiled` made one from today's sources
# (`kvcore/compiled.py`); KVCLI_PURE=1 keeps the pure-Python modules.
_compiled.install()
