"""Progress bars of long jobs (tqdm): the replications of one :func:`~jaxbandits.engine.simulate`
call, the configurations of a sweep, an experiment or a calibration, the grid points of a benchmark.

A bar appears only when the work is still going after ``DELAY`` seconds (compilation included) and
standard error is a terminal (:func:`terminal`), unless asked for (``progress=True``) or
turned off (``progress=False``): short runs, logs, pipes and test output stay silent.

Once shown, a bar is redrawn every ``REFRESH`` seconds whether or not a unit has finished, so its
clock runs and its status says what is going on ("compiling", "drawing the instances", the
configuration at work): a long compilation, or a first configuration that takes minutes, never
looks like a hang.

Nested bars (a run's inside a sweep's, a sweep's inside an experiment's or a benchmark's) take one
line each, under their parent, and are cleared when they close; the outermost bar stays as the
record of the job.  :meth:`Bar.write` prints a line above the bars.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Callable

#: seconds a job must last before its bar appears
DELAY = 3.0
#: seconds between two redraws of a shown bar when nothing else redraws it
REFRESH = 1.0

_OPEN: list["Bar"] = []    # the enabled bars open in this process, outermost first
_OPEN_LOCK = threading.Lock()


def terminal() -> bool:
    """Whether standard error (``sys.stderr``) is a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def wanted(progress) -> bool:
    """Whether ``progress`` (True, False, or None for "when standard error is a terminal") asks
    for a bar."""
    if progress is None:
        return terminal()
    return bool(progress) and not callable(progress)


def screen_shape(fp=None) -> tuple[int, int]:
    """(columns, rows) of the terminal the bars are drawn on; 100 x 20 (or ``$COLUMNS`` /
    ``$LINES``) where it cannot tell, as on a pseudo-terminal whose size was never set (tqdm
    itself draws nothing at 0 columns)."""
    fds = []
    for f in (fp, sys.stderr):
        try:
            fds.append(f.fileno())
        except (AttributeError, ValueError, OSError):
            pass
    for fd in fds:
        try:
            size = os.get_terminal_size(fd)
        except (OSError, ValueError):
            continue
        if size.columns > 0:
            return size.columns, size.lines if size.lines > 0 else 20

    def env(name, default):
        try:
            v = int(os.environ.get(name, ""))
        except ValueError:
            return default
        return v if v > 0 else default

    return env("COLUMNS", 100), env("LINES", 20)


class Bar:
    """A tqdm bar over ``total`` units (None: unknown) that shows itself after ``delay`` seconds
    (default ``DELAY``), even when no unit has finished yet, and is then redrawn every ``REFRESH``
    seconds; ``status`` says what is going on.  Opened inside another enabled bar, it takes the
    line under it and is cleared when it closes (``leave``: default only the outermost stays).
    A no-op when disabled."""

    def __init__(self, total: int | None, *, desc: str, unit: str, enabled: bool, delay: float | None = None,
                 initial: int = 0, status: str = "", leave: bool | None = None):
        self.enabled = bool(enabled)
        self._shown = False
        self._bar = None
        self._thread = None
        self._stop = threading.Event()
        if not self.enabled:
            return
        from tqdm.auto import tqdm

        delay = DELAY if delay is None else float(delay)
        with _OPEN_LOCK:
            level = len(_OPEN)
            _OPEN.append(self)
        # a notebook's bar is a widget: no sizes there
        in_terminal = not any("notebook" in c.__module__ for c in tqdm.__mro__)
        shape = dict(zip(("ncols", "nrows"), screen_shape())) if in_terminal else {}
        self._bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, delay=delay, file=sys.stderr,
                         position=level, leave=level == 0 if leave is None else leave, smoothing=0.1, **shape)
        if in_terminal:
            self._bar.dynamic_ncols = screen_shape  # follow the window's width (tqdm calls it with the file)
        if status:
            self._bar.set_postfix_str(status, refresh=False)
        self._thread = threading.Thread(target=self._tick, args=(delay,), name=f"jaxbandits-progress-{desc}",
                                        daemon=True)
        self._thread.start()

    def _tick(self, delay: float) -> None:
        """Show the bar after ``delay`` seconds, then redraw it every ``REFRESH`` seconds (its
        clock and status move even while no unit finishes) until it closes."""
        if self._stop.wait(delay):
            return
        while True:
            bar = self._bar
            if bar is None or bar.disable:
                return
            try:
                self._shown = True
                bar.refresh()
            except Exception:  # the bar closed meanwhile
                return
            if self._stop.wait(REFRESH):
                return

    @property
    def shown(self) -> bool:
        """Whether the bar has been drawn."""
        return self._shown

    def update(self, n: int = 1, status: str | None = None) -> None:
        if self._bar is not None:
            if status is not None:
                self._bar.set_postfix_str(status, refresh=False)
            self._bar.update(n)

    def set_total(self, total: int | None, status: str | None = None) -> None:
        if self._bar is not None:
            self._bar.total = total
            if status is not None:
                self._bar.set_postfix_str(status, refresh=False)
            if self._shown:
                self._bar.refresh()

    def status(self, text: str) -> None:
        """Say what is going on (drawn at once when the bar is shown)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=self._shown)

    def write(self, line: str) -> None:
        """Print ``line`` on standard output, above the bars when some are shown."""
        write(line)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
            self._thread = None
        with _OPEN_LOCK:
            if self in _OPEN:
                _OPEN.remove(self)
        bar, self._bar = self._bar, None
        if bar is not None:
            if self._shown:  # drawn by _tick: tqdm then clears (or keeps) it like a bar it drew itself
                bar.last_print_t = max(bar.last_print_t, bar.start_t + bar.delay)
            bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write(line: str) -> None:
    """Print ``line`` on standard output, above the bars when some are shown (they are cleared,
    the line printed, and they are drawn again below it); a plain print otherwise."""
    with _OPEN_LOCK:
        shown = [b for b in _OPEN if b._shown and b._bar is not None]
    if not shown:
        print(line, flush=True)
        return
    with type(shown[0]._bar).get_lock():
        for b in shown:
            b._bar.clear(nolock=True)
        print(line, flush=True)
        for b in shown:
            b._bar.refresh(nolock=True)


def lines(progress) -> Callable[[str], None] | None:
    """The line printer of ``progress``: the callable itself, or None (bars print no lines)."""
    return progress if callable(progress) else None
