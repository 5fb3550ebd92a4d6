"""A warning said while a progress bar shows on the terminal (`kvcli cluster`'s bar of requests
routed is up while the cluster says its start-up warnings, the long-run one included) prints
above the bar on a line of its own: it went to the terminal past the bar's console, glued to the
bar's line ("... 0/? 0:00:00 ETA warning: ...")."""

from __future__ import annotations

import io
import re
import sys

from kvcli import output


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:    # (rich asks; no real descriptor behind it)
        raise io.UnsupportedOperation


def test_a_warning_under_a_progress_bar_has_its_own_line(monkeypatch):
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setenv("COLUMNS", "120")
    with output.progress(None, "cluster (requests routed)") as advance:
        advance.total(10)
        output.warn("option replicas: a long run")
        advance(10)
    text = term.getvalue()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    before = plain[:plain.index("warning:")]
    # the bar's line is cleared (a carriage return) before the warning, not continued by it
    assert before.endswith("\r"), repr(plain[:200])
    # the bar drawn after it has its own colours, not the warning's yellow
    assert "\x1b[33mcluster" not in text
    assert "warning: option replicas: a long run" in plain
