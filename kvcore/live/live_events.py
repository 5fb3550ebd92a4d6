"""`LiveEvents`: the vLLM sink a live replay gets (`ReplayContext(vllm_sink=...)`, or as its
event sink with ``--events-format vllm``): each engine step's batch goes to `LiveRun.step`."""

from __future__ import annotations

from typing import Any

from kvcore.engine.vllm_events import VllmEvents


class LiveEvents(VllmEvents):
    """A replay's vLLM sink when it is live: the file (if any), the publisher, pace, metrics."""

    def __init__(self, run: Any, rank: int, file: VllmEvents | None) -> None:
        super().__init__(None, rank)     # type: ignore[arg-type]
        self.run = run
        self.file = file
        self.rank_index = rank

    def batch(self, ts_s: float, events: list) -> None:
        self.run.step(self.rank_index, ts_s, events, self.file)

    def interrupted(self) -> None:
        if self.file is not None:
            self.file.interrupted()
