"""`--realtime SPEED` (`kvcore.live.pacer.Pacer`): a step at simulated time t goes out t / SPEED
after the start; a wait past a minute is said first (two arrivals 10^12 ms apart at realtime
1000 waited 11.6 days with nothing on stderr, like a hang)."""

from __future__ import annotations

from kvcore.live import pacer as pacer_module
from kvcore.live.pacer import Pacer


class Clock:
    """time.monotonic for the pacer: moves only when the pacer idles."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def idle(self, seconds: float) -> None:
        self.now += seconds


def test_a_long_wait_is_said_before_it_starts(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(pacer_module.time, "monotonic", clock)
    said: list[str] = []
    p = Pacer(1000.0, idle=clock.idle, say=said.append)
    p.wait_until(30_000_000.0)              # 30 s of wall time: not said
    assert said == [] and abs(clock.now - 130.0) < 1e-6
    p.wait_until(120_000_000.0)             # 90 s more
    assert said == [("realtime 1000: the next step, at simulated 120,000.000 s, is 90 s of "
                     "wall time away (an idle stretch of the trace; Ctrl-C stops)")]
    assert abs(clock.now - 220.0) < 1e-6 and p.max_behind_s == 0.0


def test_a_wait_in_words():
    span = pacer_module._span
    assert [span(s) for s in (61, 150, 3 * 3600, 1e12 / 1000 / 1000)] == [
        "61 s", "2.5 min", "3.0 h", "11.6 days"]
