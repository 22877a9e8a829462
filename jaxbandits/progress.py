"""Progress bars of long runs (tqdm): replications of one :func:`~jaxbandits.engine.simulate`
call, configurations of a sweep or an experiment.

A bar appears only when the work is still going after ``DELAY`` seconds (compilation included)
and stderr is a terminal, unless asked for (``progress=True``) or turned off (``progress=False``):
short runs, logs and test output stay silent.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable

#: seconds a run must last before its bar appears
DELAY = 3.0


def wanted(progress) -> bool:
    """Whether ``progress`` (True, False, or None for "when stderr is a terminal") asks for a bar."""
    if progress is None:
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):  # replaced or closed stderr
            return False
    return bool(progress) and not callable(progress)


class Bar:
    """A tqdm bar over ``total`` units that shows itself after ``delay`` seconds, even when no unit
    has finished yet (it then says what is going on, e.g. "compiling"); a no-op when disabled."""

    def __init__(self, total: int | None, *, desc: str, unit: str, enabled: bool, delay: float = DELAY,
                 initial: int = 0, status: str = ""):
        self.enabled = enabled
        self._shown = False
        self._bar = None
        self._timer = None
        if not enabled:
            return
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, delay=delay, file=sys.stderr,
                         dynamic_ncols=True, smoothing=0.1)
        if status:
            self._bar.set_postfix_str(status, refresh=False)
        self._timer = threading.Timer(delay + 0.05, self._show)
        self._timer.daemon = True
        self._timer.start()

    def _show(self) -> None:
        bar = self._bar
        if bar is not None and not bar.disable:
            try:
                self._shown = True
                bar.refresh()
            except Exception:  # the bar closed meanwhile
                pass

    def update(self, n: int = 1, status: str | None = None) -> None:
        if self._bar is not None:
            if status is not None:
                self._bar.set_postfix_str(status, refresh=False)
            self._bar.update(n)

    def set_total(self, total: int, status: str | None = None) -> None:
        if self._bar is not None:
            self._bar.total = total
            if status is not None:
                self._bar.set_postfix_str(status, refresh=False)
            if self._shown:
                self._bar.refresh()

    def status(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=self._shown)

    def write(self, line: str) -> None:
        """Print ``line`` above the bar (or plainly when there is none)."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stdout)
        else:
            print(line, flush=True)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def lines(progress) -> Callable[[str], None] | None:
    """The line printer of ``progress``: the callable itself, or None (bars print no lines)."""
    return progress if callable(progress) else None
