"""A persistent compilation cache for the engine's programs (JAX's own ``jax_compilation_cache_dir``).

An engine program takes seconds to compile on XLA:CPU and is keyed only on the algorithm's static
configuration and the shapes, so a rerun of an experiment, a resumed sweep or a second session
finds it on disk instead of compiling it again.  The experiments' entry point turns it on by
default (``python -m experiments NAME --no-compile-cache`` or ``JAXBANDITS_COMPILATION_CACHE=off``
turn it off); library users call :func:`enable` themselves: the library changes no global JAX
setting on its own.
"""
from __future__ import annotations

import os
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


def enable(path: str | os.PathLike | None = None, min_compile_seconds: float = 0.2) -> Path:
    """Store every compiled program that took at least ``min_compile_seconds`` under ``path``
    (default :func:`default_dir`) and load it from there in later processes.  Returns the folder."""
    folder = Path(path).expanduser() if path is not None else default_dir()
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    if not _LISTENING[0]:
        jax.monitoring.register_event_listener(_count)
        _LISTENING[0] = True
    return folder


def disable() -> None:
    """Stop using the persistent cache in this process."""
    jax.config.update("jax_compilation_cache_dir", None)
