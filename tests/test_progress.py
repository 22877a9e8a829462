"""Progress bars: shown on request or on a terminal once the work lasts, silent otherwise."""
from __future__ import annotations

import time

from jaxbandits import progress


def test_bar_reports_count_rate_and_total(capsys):
    bar = progress.Bar(None, desc="run", unit="rep", enabled=True, delay=0.0, status="compiling")
    bar.set_total(3, status="")
    for _ in range(3):
        time.sleep(0.01)
        bar.update(1)
    bar.close()
    err = capsys.readouterr().err
    assert "3/3" in err and "rep/s" in err


def test_silent_when_short_or_disabled(capsys):
    for bar in (progress.Bar(5, desc="x", unit="rep", enabled=False),
                progress.Bar(5, desc="x", unit="rep", enabled=True, delay=3600.0)):
        bar.update(5)
        bar.close()
    assert capsys.readouterr().err.strip() == ""


def test_wanted():
    assert progress.wanted(True) and not progress.wanted(False)
    assert not progress.wanted(print)       # a callable gets lines, not a bar
    assert not progress.wanted(None)        # pytest's captured stderr is not a terminal
