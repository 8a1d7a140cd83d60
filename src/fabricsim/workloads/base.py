"""The table of flows (flow engine) / messages (packet engine) every workload produces.

Every table is bounded where it is built, whatever the workload: each size is a whole number
of bytes in ``1..MAX_MESSAGE_BYTES``, each start time finite in ``0..MAX_TIME_S``
(:meth:`FlowTable.build`), and all sizes of a run together at most ``MAX_TOTAL_BYTES``
(:func:`generate`), so no int64 sum or picosecond product can wrap.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric
from fabricsim.units import MAX_MESSAGE_BYTES, MAX_TIME_S, MAX_TOTAL_BYTES


def power_of_two(n: int) -> str:
    """``2**50 = 1125899906842624`` for a power of two, else the number (for messages)."""
    if n > 0 and n & (n - 1) == 0:
        return f"2**{n.bit_length() - 1} = {n}"
    return str(n)


def read_text(path: str | Path, field_name: str, shown: str | None = None) -> str:
    """The text of a user's input file, or ConfigError naming ``field_name`` and the file.

    The file must be a regular file in UTF-8 (a leading byte-order mark is dropped).  A byte
    that is not UTF-8 is reported by line and column (both counted from 1).
    """
    p = Path(path)
    name = shown if shown is not None else p.name
    if not p.exists():
        raise ConfigError(f"{field_name}: file not found: {p}")
    if not p.is_file():
        raise ConfigError(f"{field_name}: {name} is not a regular file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{field_name}: cannot read {name}: {exc.strerror or exc}") from None
    if _ET_NAME.search(p.name):
        raise ConfigError(
            f"{field_name}: {name} is a Chakra execution trace, not text; Chakra traces are "
            f"read by workload.kind: chakra (workload.path: their directory), or as a demand "
            f"matrix by workload.kind: moe with workload.matrix: chakra"
        )
    if data[:2] == b"\x1f\x8b":
        raise ConfigError(f"{field_name}: {name} is gzip-compressed; decompress it first")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{field_name}: {name}: {_where_not_utf8(data, exc.start)}") from None


_ET_NAME = re.compile(r"\.\d+\.et(?:\.gz)?$")  # a Chakra trace file, <prefix>.<rank>.et


def _where_not_utf8(data: bytes, pos: int) -> str:
    """Where the first non-UTF-8 byte is, as a message."""
    line = data.count(b"\n", 0, pos) + 1
    line_start = data.rfind(b"\n", 0, pos) + 1
    column = len(data[line_start:pos].decode("utf-8", errors="replace")) + 1
    return (
        f"line {line}, column {column}: byte 0x{data[pos]:02x} is not UTF-8 text "
        "(save the file as UTF-8)"
    )


@dataclass(eq=False)
class FlowTable:
    """Flows in flow-id order (ids are ``0 .. n-1``), as numpy columns.

    ``src_port`` is each flow's UDP source port (its entropy value), drawn once in flow-id order
    from the scenario's ``ports`` stream; both engines use it.  ``extra`` holds per-flow columns
    a workload adds (e.g. ``prompt_tokens``); they are copied into the output table.
    ``depends_on`` (optional) lists, per flow, the flow ids that must finish before it starts
    (its ``start_s`` is then the earliest start); ``gap_s`` (optional, with ``depends_on``)
    gives, per flow and per dependency, the seconds that must pass after that dependency
    finishes (compute between them, say): a dependent flow starts at
    ``max(start_s, max(finish[d] + gap))`` over its dependencies ``d``.  ``meta`` is
    workload-level information.
    """

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray
    start_s: np.ndarray
    src_port: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    depends_on: list[list[int]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    gap_s: list[list[float]] | None = None

    def __len__(self) -> int:
        return len(self.src)

    def gaps_bound_s(self) -> float:
        """An upper bound on the gaps along any dependency chain: every flow's largest gap,
        summed (0 without gaps); the engines add it to their automatic time limits."""
        if not self.gap_s:
            return 0.0
        return float(sum(max(g, default=0.0) for g in self.gap_s))

    @classmethod
    def build(cls, sc: Scenario, src, dst, size_bytes, start_s, **kw: Any) -> FlowTable:
        """Validate columns and draw the source ports from the scenario's seed.

        Sizes and start times are checked against the input bounds before any integer cast
        (ConfigError naming the workload kind and the first bad flow).
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        where = f"workload ({sc.workload.kind})"
        size = checked_sizes(np.asarray(size_bytes), where)
        start = checked_starts(np.asarray(start_s, dtype=np.float64), where)
        n = len(src)
        if not (len(dst) == len(size) == len(start) == n):
            raise ValueError("flow columns must have equal lengths")
        if kw.get("gap_s") is not None:
            _check_gaps(kw["gap_s"], kw.get("depends_on"), where)
        ports = stream(sc.seed, "ports").integers(0, 65536, size=n, dtype=np.int64)
        return cls(src, dst, size, start, ports, **kw)

    def check_hosts(self, fabric: Fabric, field_name: str = "workload") -> None:
        """Raise ConfigError if a flow names a host outside the fabric or sends to itself."""
        hosts = fabric.num_hosts
        for col, arr in (("src", self.src), ("dst", self.dst)):
            bad = np.flatnonzero((arr < 0) | (arr >= hosts))
            if len(bad):
                raise ConfigError(
                    f"{field_name}: flow {int(bad[0])} has {col} host {int(arr[bad[0]])} outside "
                    f"the fabric (hosts are 0..{hosts - 1})"
                )
        same = np.flatnonzero(self.src == self.dst)
        if len(same):
            raise ConfigError(f"{field_name}: flow {int(same[0])} sends to its own host")


def _check_gaps(gaps: list[list[float]], deps: list[list[int]] | None, where: str) -> None:
    """``gap_s`` runs beside ``depends_on`` (one gap per dependency), each finite in
    ``0..MAX_TIME_S`` seconds."""
    if deps is None or len(gaps) != len(deps):
        raise ValueError("gap_s needs depends_on, one gap per dependency")
    for i, (g, d) in enumerate(zip(gaps, deps, strict=True)):
        if len(g) != len(d):
            raise ValueError(f"flow {i}: {len(g)} gaps for {len(d)} dependencies")
        for x in g:
            if not 0.0 <= x <= MAX_TIME_S:  # NaN fails too
                raise ConfigError(
                    f"{where}: flow {i} waits {x:.6g} s after a dependency, which is not in "
                    f"0..{MAX_TIME_S:g} s"
                )


def checked_sizes(size: np.ndarray, where: str) -> np.ndarray:
    """Sizes as int64 after checking each is a whole number of bytes in 1..MAX_MESSAGE_BYTES."""
    if size.dtype.kind not in "iuf":
        raise ConfigError(f"{where}: flow sizes must be numbers (got {size.dtype})")
    vals = size.astype(np.float64)
    checks = (
        (np.isnan(vals), "is not a number"),
        (np.isinf(vals), "is not finite"),
        (vals < 1, "is less than 1 byte"),
        (
            vals > MAX_MESSAGE_BYTES,
            f"is more than {power_of_two(MAX_MESSAGE_BYTES)} bytes, the largest message allowed",
        ),
        (vals != np.floor(vals), "is not a whole number of bytes"),
    )
    for bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"{where}: flow {i} has size {_show(vals[i])} bytes, which {what}")
    return size.astype(np.int64)


def _show(value: float) -> str:
    """A size for a message: all digits when whole (up to 1e18), else 6 significant digits."""
    if np.isfinite(value) and value == np.floor(value) and abs(value) < 1e18:
        return str(int(value))
    return f"{value:.6g}"


def checked_starts(start: np.ndarray, where: str) -> np.ndarray:
    """Start times after checking each is finite and in 0..MAX_TIME_S seconds."""
    checks = (
        (np.isnan(start), "is not a number"),
        (np.isinf(start), "is not finite"),
        (start < 0, "is negative"),
        (start > MAX_TIME_S, f"is later than {MAX_TIME_S:g} s, the longest simulated time"),
    )
    for bad, what in checks:
        if bad.any():
            i = int(np.argmax(bad))
            raise ConfigError(f"{where}: flow {i} starts at {start[i]:.6g} s, which {what}")
    return start


def total_bytes(size: np.ndarray) -> int:
    """The exact sum of non-negative int64 sizes, as a Python int.

    Summed in two halves (the high bits above 2**31 and the low 31 bits), so neither int64
    partial sum can wrap, whatever the sizes.
    """
    s = np.asarray(size, dtype=np.int64)
    high = int(np.sum(s >> 31, dtype=np.int64))
    low = int(np.sum(s & (2**31 - 1), dtype=np.int64))
    return (high << 31) + low


def check_total_bytes(size: np.ndarray, where: str, what: str = "flows") -> None:
    """ConfigError if the sizes together exceed MAX_TOTAL_BYTES (an exact sum)."""
    total = total_bytes(size)
    if total > MAX_TOTAL_BYTES:
        raise ConfigError(
            f"{where}: the {len(size)} {what} carry {total} bytes in total, more than "
            f"{power_of_two(MAX_TOTAL_BYTES)} bytes, the most one run may carry"
        )


WorkloadBuilder = Callable[[Scenario, Fabric], FlowTable]
"""``generate(sc, fabric)``: the flow table of one workload kind."""


class FabricCounts(Protocol):
    """What a kind's budget terms read of the fabric, counted from the config alone."""

    hosts: int
    leaves: int


@dataclass
class WorkloadLoad:
    """A workload's load from the config alone, for the memory budget: flows, bytes, host
    pairs, MoE matrix and prompt-table entries (``None``: unknown before reading a file)."""

    flows: int = 0
    bytes_total: float | None = 0.0
    busiest: float | None = 0.0  # bytes the most loaded host sends or receives
    last_start_s: float = 0.0
    pairs: int = 0  # distinct (src, dst) host pairs, at most
    matrix: float = 0.0  # MoE matrix entries
    prompt_table: float = 0.0  # kv_cache rank-Zipf table entries
    notes: list[str] = field(default_factory=list)
    flows_key: tuple[str, Any] | None = None
    """The key (and its value as shown) that sets the flow count (None: the fabric's size),
    named when the flows' memory is over the budget."""
    packets_key: tuple[str, Any] | None = None
    """The key that sets the packets (None: the fabric's size)."""


BudgetTerms = Callable[[Any, FabricCounts], WorkloadLoad]
"""``budget(workload, fabric_counts)``: the kind's :class:`WorkloadLoad` from its config."""


@dataclass(frozen=True)
class WorkloadKind:
    """One ``workload.kind``'s registration: its model, its generator and its budget terms."""

    kind: str
    model: type[Any]
    """Its pydantic model (:mod:`fabricsim.config.workloads`, one member of the union)."""
    generate: WorkloadBuilder
    budget: BudgetTerms
    """What :func:`fabricsim.experiments.budget.estimate` prices for it."""


_REGISTRY: dict[str, WorkloadKind] = {}
_PROVIDERS: dict[str, str] = {}
"""``workload.kind`` -> the module whose import registers it (:func:`provide`), imported when
the kind is first looked up."""


def provide(module: str, *kinds: str) -> None:
    """Declare that importing ``module`` registers ``kinds``; it is imported when one of them
    is first looked up (:func:`workload_kind`, :func:`generate`, :func:`registered_workloads`).

    perf: a run imports the module of its own kind only (a 128-host ``.cm`` trace run does not
    import the MoE, Chakra, KV-cache or collective generators).
    """
    for kind in kinds:
        _PROVIDERS[kind] = module


def _registration(kind: str) -> WorkloadKind | None:
    if kind not in _REGISTRY and kind in _PROVIDERS:
        importlib.import_module(_PROVIDERS[kind])  # its register() calls fill _REGISTRY
    return _REGISTRY.get(kind)


def register(
    kind: str, *, model: type[Any], budget: BudgetTerms
) -> Callable[[WorkloadBuilder], WorkloadBuilder]:
    """Register ``workload.kind`` = ``kind``: its model, the decorated generator, its budget.

    The model must be the one whose ``kind`` is ``kind`` (the config's union member).
    """
    declared = model.model_fields["kind"].default
    if declared != kind:
        raise ValueError(f"workload kind {kind!r}: its model {model.__name__} is {declared!r}")

    def deco(fn: WorkloadBuilder) -> WorkloadBuilder:
        _REGISTRY[kind] = WorkloadKind(kind, model, fn, budget)
        return fn

    return deco


def unregister(kind: str) -> None:
    """Remove a registered kind (a test's)."""
    _REGISTRY.pop(kind, None)


def registered_workloads() -> tuple[str, ...]:
    """Workload kinds with a registered builder: the provided ones in the order they were
    declared (:func:`provide`; each module imported), then any other in registration order."""
    provided = [kind for kind in _PROVIDERS if _registration(kind) is not None]
    return (*provided, *(kind for kind in _REGISTRY if kind not in _PROVIDERS))


def workload_kind(kind: str) -> WorkloadKind | None:
    """The registration of ``kind`` (None: not registered)."""
    return _registration(kind)


def harmonic(n: float, a: float) -> float:
    """``sum(r ** -a for r in 1..n)``: 64 terms exactly, the tail by Euler-Maclaurin (< 1e-6).

    >>> round(harmonic(3, 1.0), 6), abs(harmonic(1000, 1.0) - sum(1 / r for r in range(1, 1001))) < 1e-6
    (1.833333, True)
    """
    head = float(sum(r**-a for r in range(1, int(min(n, 64)) + 1)))
    if n <= 64:
        return head
    m = 65.0
    if abs(a - 1.0) < 1e-12:
        integral = math.log(n) - math.log(m)
    else:
        integral = (n ** (1 - a) - m ** (1 - a)) / (1 - a)
    ends = (m**-a + n**-a) / 2 + a * (m ** (-a - 1) - n ** (-a - 1)) / 12
    return head + integral + ends


def generate(sc: Scenario, fabric: Fabric) -> FlowTable:
    """Build the scenario's flow table on ``fabric``; refuse flows outside the input bounds."""
    kind = sc.workload.kind
    registered = _registration(kind)
    if registered is None:
        raise ConfigError(f"workload.kind: '{kind}' is not available yet in this build")
    table = registered.generate(sc, fabric)
    table.check_hosts(fabric)
    where = f"workload ({kind})"
    checked_sizes(table.size_bytes, where)
    checked_starts(table.start_s, where)
    check_total_bytes(table.size_bytes, where)
    return table
