"""Where runs go: a local process pool or a Dask distributed client, one interface.

Both offer ``submit(fn, task)`` returning a future with ``result()``, ``as_completed(futures)``
and ``close(cancel)``, so :mod:`fabricsim.experiments.runs` has a single code path for a sweep,
a comparison and the ARK study.  Local workers die with the driver however it ends (see
:func:`worker_pool`); the helpers below defer and translate the signals around a pool.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

from fabricsim.errors import ConfigError, Terminated
from fabricsim.metrics.outdir import pid_alive

MAX_WORKERS = max(256, 4 * (os.cpu_count() or 1))
"""Most local worker processes one command may start."""

_DRIVER_ENV = "FABRICSIM_POOL_DRIVER_PID"
# the modules of the workers' task functions, imported once by the forkserver
_PRELOAD = [
    "fabricsim.experiments.sweep",
    "fabricsim.experiments.compare",
    "fabricsim.experiments.study",
    "fabricsim.decomposed.simulate",
]
_PR_SET_PDEATHSIG = 1


# -- workers die with the driver ----------------------------------------------------------------


def _set_pdeathsig() -> bool:
    """Linux: have the kernel SIGKILL this process when its parent exits."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _guard_forkserver() -> None:
    """In the forkserver (it imports this module as a preload): die with the driver.

    The forkserver is the workers' parent and the driver hands every worker the forkserver's
    "alive" pipe, so it would outlive a killed driver as long as its workers do, and they (each
    holding both ends of the pool's call queue) would wait forever.  With PDEATHSIG on both,
    killing the driver kills the forkserver, which kills the workers.
    """
    driver = os.environ.get(_DRIVER_ENV)
    if driver and driver == str(os.getppid()):
        _set_pdeathsig()
        if os.getppid() != int(driver):  # the driver died before prctl took effect
            os._exit(1)
        # the forkserver hands its signal handlers (taken after this preload) to every worker
        # it forks: a Ctrl-C to the terminal's process group must not reach a starting worker
        signal.signal(signal.SIGINT, signal.SIG_IGN)


_guard_forkserver()


def _watch(driver_pid: int, parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid or not pid_alive(driver_pid):
            os._exit(1)


def init_worker(driver_pid: int) -> None:
    """Pool initializer: ignore Ctrl-C (the driver handles it) and die with the driver.

    Linux: PDEATHSIG (the kernel kills the worker when its parent, the forkserver or the
    driver, exits); everywhere: a watchdog thread that exits when the driver is gone.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()
    _set_pdeathsig()
    if not pid_alive(driver_pid):
        os._exit(1)
    threading.Thread(
        target=_watch, args=(driver_pid, parent), name="fabricsim-watchdog", daemon=True
    ).start()


_FORKSERVER_LOCK = threading.Lock()


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers die with this process (killed, interrupted or not).

    A fresh single-threaded forkserver forks the workers (never a threaded parent); it imports
    fabricsim once, so workers start in milliseconds, not seconds as with spawn.
    """
    import multiprocessing

    ctx: Any
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        ctx = multiprocessing.get_context("forkserver")
        with _FORKSERVER_LOCK:
            ctx.set_forkserver_preload(_PRELOAD)
            # PDEATHSIG fires when the parent *thread* ends: only a forkserver started by the
            # main thread may tie its life to ours (a worker thread may end before we do)
            main = threading.current_thread() is threading.main_thread()
            old = os.environ.get(_DRIVER_ENV)
            if main:  # only the forkserver started now sees it
                os.environ[_DRIVER_ENV] = str(os.getpid())
            # started with SIGINT ignored (kept across exec), a Ctrl-C to the process group
            # cannot interrupt its imports with a traceback; it hands SIG_IGN to its workers
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
            try:
                forkserver.ensure_running()
            finally:
                if main:
                    signal.signal(signal.SIGINT, previous)
                if old is None:
                    os.environ.pop(_DRIVER_ENV, None)
                else:
                    os.environ[_DRIVER_ENV] = old
    else:
        ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=init_worker, initargs=(os.getpid(),)
    )


def stop_pool(pool: ProcessPoolExecutor, timeout_s: float = 2.0) -> None:
    """Cancel what has not started, terminate the workers and wait (briefly) for them."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets the queue
    results = getattr(pool, "_result_queue", None)
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    deadline = time.monotonic() + timeout_s
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        with contextlib.suppress(Exception):
            if p.is_alive():
                p.kill()
                p.join(1.0)
    _unblock_manager(manager, getattr(results, "_writer", None), timeout_s)


def _unblock_manager(manager: Any, writer: Any, timeout_s: float) -> None:
    """Let the pool's manager thread end although a worker died in the middle of a result.

    The thread reads results from a pipe; a worker terminated while it wrote a large result
    leaves a message cut short, and the thread waits for its remaining bytes forever.  It is
    not a daemon thread, so the interpreter would wait for it at exit (the driver hangs after
    printing ``interrupted``).  The workers are gone, so this process holds the only writer:
    filler bytes complete the message, the thread fails to decode it, marks the pool broken
    and ends.
    """
    if manager is None or writer is None:
        return
    manager.join(0.1)
    if not manager.is_alive():
        return
    with contextlib.suppress(Exception):
        fd = writer.fileno()
        os.set_blocking(fd, False)
        filler = bytes(1 << 16)
        deadline = time.monotonic() + timeout_s
        while manager.is_alive() and time.monotonic() < deadline:
            with contextlib.suppress(BlockingIOError):
                os.write(fd, filler)
            manager.join(0.02)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on them as usual.

    Around submitting to a pool: ``submit`` starts worker processes, and an interrupt in the
    middle of a start would leave a worker the pool does not know of (so cannot stop).  The
    handlers are swapped (not the signal mask: native threads of numpy/pyarrow would take
    the signal and Python would still raise in the main thread).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        pending.append(signum)

    old: dict[int, Any] = {}
    try:
        for held in (signal.SIGINT, signal.SIGTERM):
            old[held] = signal.signal(held, hold)
    except (ValueError, OSError):
        pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if pending:
            sig = pending[0]
            handler = old.get(sig, signal.SIG_DFL)
            if callable(handler):
                handler(sig, None)  # default_int_handler raises KeyboardInterrupt
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), sig)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`~fabricsim.errors.Terminated` (a
    KeyboardInterrupt: cleanup runs as for Ctrl-C); the command line's handler, which does
    so already, is kept."""
    current = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or getattr(
        current, "raises_terminated", False
    ):
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_workers(workers: int | None, option: str = "--workers") -> None:
    """Refuse a worker count below 1 or above :data:`MAX_WORKERS`."""
    if workers is None:
        return
    if workers < 1:
        raise ConfigError(f"{option}: must be >= 1 (got {workers})")
    if workers > MAX_WORKERS:
        raise ConfigError(f"{option}: at most {MAX_WORKERS} local processes (got {workers})")


def check_timeout(timeout_s: float, option: str = "--connect-timeout") -> None:
    """Refuse a timeout that is not a positive, finite number of seconds (at most an hour)."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise ConfigError(f"{option}: expected a number of seconds (got {timeout_s!r})")
    if math.isnan(timeout_s):
        raise ConfigError(f"{option}: not a number (got nan); give seconds, e.g. 5")
    if math.isinf(timeout_s):
        raise ConfigError(f"{option}: must be a finite number of seconds (got {timeout_s})")
    if timeout_s <= 0:
        raise ConfigError(f"{option}: must be > 0 s (got {timeout_s:g})")
    if timeout_s > 3600:
        raise ConfigError(f"{option}: at most 3600 s (got {timeout_s:g})")


IN_PROCESS = 0
"""``workers=IN_PROCESS`` (the Python API's ``workers=1``): run each task here, in order."""


class _InProcessBackend:
    """Tasks run in this process as they are submitted (no isolation; for notebooks and
    scripts, where worker processes would import the calling script again)."""

    name = "this process"

    def submit(self, fn: Callable, arg: Any) -> Any:
        future: Future = Future()
        try:
            future.set_result(fn(arg))
        except Exception as exc:  # noqa: BLE001 - the future carries it, as a pool's would
            future.set_exception(exc)
        return future

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        return iter(futures)

    def close(self, cancel: bool = False) -> None:
        return None


class _LocalBackend:
    """Tasks in worker processes on this machine."""

    def __init__(self, workers: int) -> None:
        self.pool = worker_pool(workers)
        self.name = f"{workers} local worker process{'es' if workers > 1 else ''}"

    def submit(self, fn: Callable, arg: Any) -> Any:
        return self.pool.submit(fn, arg)

    def as_completed(self, futures: list[Any]) -> Iterator[Any]:
        return as_completed(futures)

    def close(self, cancel: bool = False) -> None:
        if cancel:
            stop_pool(self.pool)
        else:
            self.pool.shutdown(wait=True)


def _connect(client_cls: Any, address: str, timeout_s: float) -> Any:
    """A Dask client, or one ConfigError line if no Dask scheduler answers in time.

    The client is made in a daemon thread with a hard deadline: ``Client(timeout=...)`` bounds
    the TCP connect but not the handshake, so a server that accepts and never speaks (or speaks
    something else) would otherwise hang or crash the sweep.  A client that failed half-way is
    disarmed (its finaliser would print a traceback at exit) and Dask's loggers are quietened:
    the one line of the ConfigError says what went wrong.
    """
    box: dict[str, Any] = {}

    class Capturing(client_cls):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            box["half"] = self
            super().__init__(*args, **kwargs)

    def target() -> None:
        try:
            box["client"] = Capturing(address, timeout=timeout_s, set_as_default=False)
        except BaseException as exc:  # noqa: BLE001 - any failure means "not reachable"
            box["error"] = exc

    loggers = [logging.getLogger(n) for n in ("distributed", "tornado", "asyncio")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        thread = threading.Thread(target=target, name="fabricsim-dask-connect", daemon=True)
        thread.start()
        thread.join(timeout_s + 1.0)
    finally:
        if "client" in box:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)
    if "client" in box:
        return box["client"]
    exc = box.get("error")  # read before disarming: stopping its loop makes the thread fail
    _disarm(box.get("half"))
    _silence_client_finalizers()
    if exc is None:
        reason = "no Dask handshake"
    elif isinstance(exc, OSError | TimeoutError) or type(exc).__name__ in (
        "CommClosedError",
        "TimeoutError",
    ):
        reason = (str(exc).splitlines() or [""])[0] or type(exc).__name__
    else:
        reason = f"the server does not speak the Dask protocol: {type(exc).__name__}"
    raise ConfigError(
        f"--scheduler: cannot reach a Dask scheduler at {address} within {timeout_s:g} s ({reason})"
    )


def _disarm(client: Any) -> None:
    """Stop a half-made client's event loop and mark it closed, so ``__del__`` does nothing."""
    if client is None:
        return
    with contextlib.suppress(Exception):
        client.status = "closed"
    with contextlib.suppress(Exception):
        client._loop_runner.stop(timeout=0.5)


def _silence_client_finalizers() -> None:
    """A half-made Client may still complain from a finaliser at exit; we already said why."""
    previous = sys.unraisablehook

    def from_dask(unraisable: Any) -> bool:
        obj = getattr(unraisable, "object", None)
        names = [
            str(getattr(obj, "__module__", "")),
            str(getattr(type(obj), "__module__", "")),
            repr(obj),
        ]
        tb = getattr(unraisable, "exc_traceback", None)
        while tb is not None:
            names.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
        return any("distributed" in n or "tornado" in n for n in names)

    def hook(unraisable: Any) -> None:
        if from_dask(unraisable):
            return
        previous(unraisable)

    sys.unraisablehook = hook


class _DaskBackend:
    """Tasks on a Dask distributed cluster (``task["id"]`` names each one)."""

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
        if cancel:  # the scheduler forgets tasks whose futures the closed client released
            with contextlib.suppress(BaseException):
                self.client.close(timeout=2)
            _silence_client_finalizers()
            return
        self.client.close()


_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://\S+$")


def open_backend(
    workers: int | None = None,
    scheduler: str | None = None,
    timeout_s: float = 5.0,
    limit: int | None = None,
):
    """A local process pool (``workers``) or a Dask client (``scheduler``); not both.

    ``limit`` caps the local pool (no more processes than tasks to run);
    ``workers=IN_PROCESS`` runs the tasks in this process.
    """
    if workers is not None and scheduler is not None:
        raise ConfigError("--workers: give --workers N or --scheduler ADDR, not both")
    if scheduler is not None:
        if not _ADDRESS.match(scheduler):
            raise ConfigError(
                f"--scheduler: expected an address like tcp://host:8786 (got {scheduler!r})"
            )
        check_timeout(timeout_s)
        return _DaskBackend(scheduler, timeout_s)
    if workers == IN_PROCESS:
        return _InProcessBackend()
    check_workers(workers)
    n = workers or os.cpu_count() or 1
    return _LocalBackend(max(1, min(n, limit)) if limit else n)
