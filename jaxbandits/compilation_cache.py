"""A persistent compilation cache for the engine's programs (JAX's own ``jax_compilation_cache_dir``).

An engine program takes seconds to compile on XLA:CPU and is keyed only on the algorithm's static
configuration and the shapes, so a rerun of an experiment, a resumed sweep or a second session
finds it on disk instead of compiling it again.  The experiments' entry point turns it on by
default (``python -m experiments NAME --no-compile-cache`` or ``JAXBANDITS_COMPILATION_CACHE=off``
turn it off); library users call :func:`enable` themselves: the library changes no global JAX
setting on its own.

Two guards make the cache safe to share (a home folder mounted on every node of a cluster):

* Programs are stored under a folder named by the host CPU's instruction-set features
  (:func:`host_cpu_key`), so a process never loads a program compiled for another CPU, which could
  stop with SIGILL.  JAX's own cache key covers jaxlib and the backend, not the CPU's features.
* jaxlib 0.9's XLA:CPU compiles with the LLVM tuning features ``+prefer-no-gather`` and
  ``+prefer-no-scatter`` on every AVX-512 host (``IrCompiler::build_target_machine``), and its loader
  then compares them against the host's instruction-set features, where they never appear: every
  program loaded from disk, on the very machine that compiled it, logs two ``E ...
  cpu_aot_loader.cc`` lines ("... could lead to execution errors such as SIGILL") and one ``W ...
  pjrt_executable.cc`` line ("Assume version compatibility").  Later XLA skips ``prefer-`` and
  ``fast-`` features in that comparison.  :func:`enable` installs :class:`SpuriousLogFilter` on
  the process's standard error, which drops exactly those lines: a loader line naming a real
  instruction-set feature, and every other line, still reach the screen.
"""
from __future__ import annotations

import atexit
import faulthandler
import hashlib
import os
import platform
import re
import select
import sys
import threading
from pathlib import Path

import jax

ENV = "JAXBANDITS_COMPILATION_CACHE"


def default_dir() -> Path:
    """``$JAXBANDITS_COMPILATION_CACHE`` if it is a path, else ``$XDG_CACHE_HOME/jaxbandits/xla``
    (``~/.cache/jaxbandits/xla``)."""
    env = os.environ.get(ENV, "")
    if env and env.lower() not in ("1", "on", "true", "yes", "0", "off", "false", "no"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxbandits" / "xla"


def disabled_by_env() -> bool:
    return os.environ.get(ENV, "").lower() in ("0", "off", "false", "no")


_COUNTS = {"requests": 0, "hits": 0}
_LISTENING = [False]


def _count(event: str, **_) -> None:
    if event == "/jax/compilation_cache/compile_requests_use_cache":
        _COUNTS["requests"] += 1
    elif event == "/jax/compilation_cache/cache_hits":
        _COUNTS["hits"] += 1


def counts() -> dict:
    """{"requests": programs looked up in the persistent cache, "hits": found there} in this
    process since :func:`enable` (JAX's ``jax.monitoring`` events); requests - hits were
    compiled by XLA."""
    return dict(_COUNTS)


def _cpu_features() -> str:
    """The host CPU's instruction-set features as the operating system reports them (Linux:
    ``flags`` / ``Features`` of ``/proc/cpuinfo``; elsewhere the processor's description)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return " ".join(sorted(value.split()))
    except OSError:
        pass
    return f"{platform.processor()} {platform.platform()}"


def host_cpu_key() -> str:
    """The name of the cache's sub-folder for this host: the machine type and a hash of its CPU's
    instruction-set features (``x86_64-3f9a0c1d2e4b``).  Two hosts share compiled programs only
    when their CPUs offer the same instructions."""
    digest = hashlib.sha256(_cpu_features().encode()).hexdigest()[:12]
    return f"{platform.machine() or 'cpu'}-{digest}"


#: the lines :class:`SpuriousLogFilter` drops: the loader's complaint about an LLVM *tuning*
#: feature (``prefer-...``, ``fast-...``: how to schedule, not which instructions exist), and the
#: per-load note that PjRt does not track executable versions (JAX's cache key carries jaxlib's)
SPURIOUS = (re.compile(rb"^[EW]\d{4} [^\n]*cpu_aot_loader\.cc:\d+\] Loading XLA:CPU AOT result\. "
                       rb"Target machine feature \+(prefer|fast)-[\w-]+ is not"),
            re.compile(rb"^W\d{4} [^\n]*pjrt_executable\.cc:\d+\] Assume version compatibility\."))
_LOG_LINE = re.compile(rb"^[IWEF]\d{4} ")
_LOG_START = re.compile(rb"^[IWEF]\d{0,4}$")   # a chunk that may be the start of a log line


class SpuriousLogFilter:
    """XLA's log lines through a filter that drops those of :data:`SPURIOUS`.

    XLA writes its log lines to file descriptor 2.  The filter points that descriptor at a pipe
    read by a thread, which passes every line on to the original standard error except the lines
    of :data:`SPURIOUS`; only lines that begin like an XLA log line (``E1128 08:40:59.005554 ...``)
    wait for their end of line before being judged.  Python's ``sys.stderr`` (progress bars,
    warnings, tracebacks) is pointed straight at the original standard error, so it stays a
    terminal where it was one.  At exit (and on :meth:`remove`) both are put back and what is
    still in the pipe is passed on."""

    def __init__(self):
        sys.stderr.flush()
        self.real = os.dup(2)
        self.read_end, write_end = os.pipe()
        os.dup2(write_end, 2)
        os.close(write_end)
        self.python_stderr = sys.stderr
        sys.stderr = self.ours = open(os.dup(self.real), "w", buffering=1, errors="backslashreplace",
                                      encoding=getattr(sys.stderr, "encoding", None))
        if faulthandler.is_enabled():   # a crash report must not wait in the pipe of a dead process
            faulthandler.enable(file=sys.stderr)
        self.dropped = 0
        self.thread = threading.Thread(target=self._pump, name="jaxbandits-stderr-filter", daemon=True)
        self.thread.start()
        atexit.register(self.remove)

    def _emit(self, data: bytes) -> None:
        while data:
            data = data[os.write(self.real, data):]

    def _judge(self, line: bytes) -> None:
        if any(p.search(line) for p in SPURIOUS):
            self.dropped += 1
        else:
            self._emit(line)

    def _pump(self) -> None:
        pending = b""   # an XLA log line waiting for its end
        while True:
            ready, _, _ = select.select([self.read_end], [], [], 0.5)
            chunk = os.read(self.read_end, 65536) if ready else None
            if chunk == b"":            # every writer closed: pass on what is left and stop
                if pending:
                    self._judge(pending)
                return
            if chunk is None:           # quiet for a while: a log line without its end goes out
                if pending:
                    self._emit(pending)
                    pending = b""
                continue
            data = pending + chunk
            pending = b""
            while data:
                cut = data.find(b"\n")
                if cut < 0:
                    if _LOG_LINE.match(data) or _LOG_START.match(data):
                        pending = data
                    else:
                        self._emit(data)
                    break
                line, data = data[:cut + 1], data[cut + 1:]
                if _LOG_LINE.match(line):
                    self._judge(line)
                else:
                    self._emit(line)

    def remove(self) -> None:
        """Put the original standard error back and pass on what is still in the pipe."""
        if self.real is None:
            return
        ours = self.ours
        if sys.stderr is ours:
            sys.stderr = self.python_stderr
        try:
            ours.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if faulthandler.is_enabled():
            faulthandler.enable(file=sys.stderr)
        os.dup2(self.real, 2)           # closes this process's write end of the pipe
        self.thread.join(timeout=2.0)   # children that still hold the pipe keep it open
        os.close(self.real)
        self.real = None
        ours.close()
        _FILTER[0] = None


_FILTER: list[SpuriousLogFilter | None] = [None]


def filter_spurious_logs() -> SpuriousLogFilter:
    """Install :class:`SpuriousLogFilter` once in this process (idempotent); returns it."""
    if _FILTER[0] is None:
        _FILTER[0] = SpuriousLogFilter()
    return _FILTER[0]


def restore_stderr() -> None:
    """Remove :class:`SpuriousLogFilter` if this process has one, passing on what it holds: before
    ``os.execv`` (the new program would write into a pipe nobody reads) or ``os._exit``."""
    if _FILTER[0] is not None:
        _FILTER[0].remove()


def enable(path: str | os.PathLike | None = None, min_compile_seconds: float = 0.2, *,
           quiet: bool = True) -> Path:
    """Store every compiled program that took at least ``min_compile_seconds`` under
    ``path / host_cpu_key()`` (``path`` defaults to :func:`default_dir`) and load it from there in
    later processes on hosts with the same CPU features.  ``quiet`` installs
    :class:`SpuriousLogFilter` (the loader's tuning-feature lines).  Returns the folder used."""
    folder = (Path(path).expanduser() if path is not None else default_dir()) / host_cpu_key()
    folder.mkdir(parents=True, exist_ok=True)
    if quiet:
        filter_spurious_logs()
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    if not _LISTENING[0]:
        jax.monitoring.register_event_listener(_count)
        _LISTENING[0] = True
    return folder


def disable() -> None:
    """Stop using the persistent cache in this process (and remove the log filter)."""
    jax.config.update("jax_compilation_cache_dir", None)
    restore_stderr()
