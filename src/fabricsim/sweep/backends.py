"""Where points run: a local process pool or a Dask distributed client, one interface.

Both offer ``submit(fn, arg)`` returning a future with ``result()``, ``as_completed(futures)``
and ``close(cancel)``, so :func:`fabricsim.sweep.run_sweep` has a single code path.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from fabricsim.errors import ConfigError


class _LocalBackend:
    """Points in worker processes on this machine."""

    def __init__(self, workers: int) -> None:
        import multiprocessing

        # a fresh single-threaded server forks the workers (never a threaded parent); it
        # imports fabricsim once, so workers start in milliseconds, not seconds as with spawn
        ctx: Any
        if "forkserver" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["fabricsim.sweep.run"])
        else:
            ctx = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
        self.name = f"{workers} local worker process{'es' if workers > 1 else ''}"

    def submit(self, fn: Callable, arg: Any) -> Any:
        return self.pool.submit(fn, arg)

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        from concurrent.futures import as_completed

        return as_completed(futures)

    def close(self, cancel: bool = False) -> None:
        self.pool.shutdown(wait=not cancel, cancel_futures=cancel)


def _connect(client_cls: Any, address: str, timeout_s: float) -> Any:
    """A Dask client, or one ConfigError line if no Dask scheduler answers in time.

    The client is made in a daemon thread with a hard deadline: ``Client(timeout=...)`` bounds
    the TCP connect but not the handshake, so a server that accepts and never speaks (or speaks
    something else) would otherwise hang or crash the sweep.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["client"] = client_cls(address, timeout=timeout_s, set_as_default=False)
        except BaseException as exc:  # noqa: BLE001 - any failure means "not reachable"
            box["error"] = exc

    thread = threading.Thread(target=target, name="fabricsim-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout_s + 2.0)
    if "client" in box:
        return box["client"]
    _silence_client_finalizers()
    exc = box.get("error")
    if exc is None:
        reason = "no Dask handshake"
    else:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0] or type(exc).__name__
    raise ConfigError(
        f"--scheduler: cannot reach a Dask scheduler at {address} within {timeout_s:g} s ({reason})"
    )


def _silence_client_finalizers() -> None:
    """A half-made Client complains from ``__del__`` at exit; we already said why, once."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if "distributed" in repr(getattr(unraisable, "object", "")):
            return
        previous(unraisable)

    sys.unraisablehook = hook


class _DaskBackend:
    """Points as tasks on a Dask distributed cluster."""

    def __init__(self, address: str, timeout_s: float) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ConfigError(
                "--scheduler: dask.distributed is not installed (pip install 'fabricsim[dask]')"
            ) from None
        self.client = _connect(Client, address, timeout_s)
        self.name = f"Dask scheduler {address}"

    def submit(self, fn: Callable, arg: Any) -> Any:
        key = f"fabricsim-point-{arg['id']}-{uuid.uuid4().hex[:12]}"  # unique per submission
        return self.client.submit(fn, arg, pure=False, key=key)

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        from distributed import as_completed

        return iter(as_completed(futures, loop=self.client.loop))

    def close(self, cancel: bool = False) -> None:
        self.client.close()


_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://\S+$")


def open_backend(workers: int | None = None, scheduler: str | None = None, timeout_s: float = 5.0):
    """A local process pool (``workers``) or a Dask client (``scheduler``); not both."""
    if workers is not None and scheduler is not None:
        raise ConfigError("--workers: give --workers N or --scheduler ADDR, not both")
    if scheduler is not None:
        if not _ADDRESS.match(scheduler):
            raise ConfigError(
                f"--scheduler: expected an address like tcp://host:8786 (got {scheduler!r})"
            )
        return _DaskBackend(scheduler, timeout_s)
    if workers is not None and workers < 1:
        raise ConfigError(f"--workers: must be >= 1 (got {workers})")
    return _LocalBackend(workers or os.cpu_count() or 1)
