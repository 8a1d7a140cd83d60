"""Which modules the build compiles, and how to tell at run time what is running.

The hot path of the packet engine is plain Python (the readable reference, the debugger's
view) with its C types declared in a ``.pxd`` beside each module; the build compiles those
modules with Cython when it can (``setup.py``).  ``FABRICSIM_PURE=1`` runs the ``.py`` files
even where the compiled modules exist.  Stdlib only: ``setup.py`` imports this file too.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys

COMPILED = (
    "fabricsim.routing.mix",
    "fabricsim.packetsim.pfc",
    "fabricsim.packetsim.packets",
    "fabricsim.packetsim.calendar",
    "fabricsim.packetsim.ports",
    "fabricsim.cc.base",
    "fabricsim.cc.nscc",
    "fabricsim.cc.dcqcn",
    "fabricsim.lb.spraying",
    "fabricsim.lb.reps",
    "fabricsim.nic.pdc",
    "fabricsim.nic.nic",
    "fabricsim.transport.roce_sr",
    "fabricsim.transport.roce",
    "fabricsim.packetsim.forwarding",
    "fabricsim.flowsim.incidence",
    "fabricsim.flowsim.kernel",
    "fabricsim.flowsim.engine",
)
"""Modules compiled by the build (their ``.pxd`` declares the C types)."""

DIRECTIVES = {"binding": False, "annotation_typing": False, "embedsignature": True}
"""Cython directives: the ``.pxd`` files, not the annotations, give the C types."""

PURE_ENV = "FABRICSIM_PURE"


_WARNED: list[str] = []


def warn_pure(why: str) -> None:
    """Say once, at build time, that the package installs without its compiled core."""
    if _WARNED:
        return
    _WARNED.append(why)
    print(
        f"fabricsim: building without the compiled core ({why}); the package runs as pure "
        "Python (slower, same results)",
        file=sys.stderr,
    )


def pure_requested() -> bool:
    """Whether ``FABRICSIM_PURE`` asks for the pure-Python modules."""
    return os.environ.get(PURE_ENV, "").strip().lower() not in ("", "0", "false", "no")


HASH_SUFFIX = ".srchash"


def digest(source: str | os.PathLike[str]) -> str:
    """Hash of a module's source and of every compiled module's C type declarations.

    Every ``.pxd``, not only the module's own: a module that ``cimport``s another's class is
    compiled against that class's layout (a field added to ``nic/pdc.pxd`` changes the object
    ``nic/nic`` reads), so a build is current only while every declaration it saw is."""
    h = hashlib.sha256()
    with open(source, "rb") as fh:
        h.update(fh.read())
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(COMPILED):
        pxd = os.path.join(here, *name.split(".")[1:]) + ".pxd"
        h.update(name.encode())
        if os.path.exists(pxd):
            with open(pxd, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def write_source_hash(source: str | os.PathLike[str], compiled: str | os.PathLike[str]) -> None:
    """Record, beside the compiled module, the hash of the source it was compiled from."""
    with open(_stem(str(compiled)) + HASH_SUFFIX, "w", encoding="ascii") as fh:
        fh.write(digest(source) + "\n")


def _stem(compiled: str) -> str:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if compiled.endswith(suffix):
            return compiled[: -len(suffix)]
    return compiled


def _stale(source: str) -> bool:
    """Whether a compiled module beside ``source`` was built from other source text or type
    declarations (an edit or a checkout since the build; a build that recorded no hash counts
    as stale)."""
    stem = source[: -len(".py")]
    if not any(os.path.exists(stem + s) for s in importlib.machinery.EXTENSION_SUFFIXES):
        return False  # nothing compiled here: the normal import finds the source anyway
    try:
        with open(stem + HASH_SUFFIX, encoding="ascii") as fh:
            return fh.read().strip() != digest(source)
    except OSError:
        return True


class _PureFinder:
    """Meta-path finder that loads the ``.py`` sources of the compiled modules when pure mode
    is asked for, or when any of their sources changed after they were compiled.

    All or none: the compiled modules share C types (``cimport``), so one stale module runs
    every one of them from source."""

    _pure: bool | None = None

    @classmethod
    def _all_pure(cls) -> bool:
        if pure_requested():
            return True
        if cls._pure is None:
            stale = [s for s in _sources() if _stale(s)]
            cls._pure = bool(stale)
            for source in stale:
                print(
                    f"fabricsim: {source} changed since it was compiled; running the compiled "
                    "modules as pure Python (pip install -e . recompiles them)",
                    file=sys.stderr,
                )
        return cls._pure

    @classmethod
    def find_spec(cls, name: str, path=None, target=None):
        if name not in COMPILED or not path:
            return None
        for entry in path:
            source = os.path.join(entry, name.rpartition(".")[2] + ".py")
            if not os.path.exists(source):
                continue
            if not cls._all_pure():
                return None  # the compiled module is current: the normal import finds it
            loader = importlib.machinery.SourceFileLoader(name, source)
            return importlib.util.spec_from_file_location(name, source, loader=loader)
        return None


def _sources() -> list[str]:
    """The source files of :data:`COMPILED` (beside this file's package)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [os.path.join(root, *m.split(".")) + ".py" for m in COMPILED]


def install() -> None:
    """Route imports of the compiled modules through :class:`_PureFinder` (once)."""
    if not any(isinstance(f, _PureFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _PureFinder())


def core_mode() -> str:
    """``compiled`` if every module of :data:`COMPILED` runs compiled, else ``pure``."""
    for name in COMPILED:
        module = sys.modules.get(name) or importlib.import_module(name)
        where = getattr(module, "__file__", None) or ""
        if not where.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            return "pure"
    return "compiled"
