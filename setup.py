"""Build hook: compile the packet engine's hot modules with Cython when it and a C compiler are
available; otherwise install the same modules as plain Python (they are the readable reference
and run unchanged).  The modules and their type declarations (``.pxd`` beside each ``.py``) are
listed in ``src/fabricsim/_core_build.py``; everything else is in ``pyproject.toml``.

perf: a fresh build translates and compiles on every CPU (``cythonize(nthreads=)``,
``build_ext.parallel``) without debug information (``-g0``: the debug sections were 40 % of
gcc's time on the packet core's largest module); a module whose compiled file beside its source was built
from the same source text (the ``.srchash`` check of the runtime) is copied, not compiled
again, so the Quickstart's second ``pip install -e`` does not rebuild what the first built.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, str(Path(__file__).parent / "src" / "fabricsim"))
import _core_build  # noqa: E402  (the list of compiled modules, shared with the runtime check)

JOBS = max(1, min(len(_core_build.COMPILED), os.cpu_count() or 1))
SECONDS_PER_MODULE_CPU = 9
"""Measured: a module's translation and compilation, about 100 CPU seconds for the 13 modules."""


def _tell(text: str) -> None:
    """One line to the person at the terminal: pip keeps a build's own output to itself."""
    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:
            tty.write(text + "\n")
        return
    except OSError:  # no terminal (CI, a pipe): the build log has it
        pass
    print(text, file=sys.stderr)


def _source(name: str) -> Path:
    return Path("src", *name.split(".")).with_suffix(".py")


def _built_beside(name: str) -> Path | None:
    """The compiled module beside ``name``'s source if it was built from the same source and
    type declarations (and for this interpreter), else None."""
    source = _source(name)
    built = source.with_name(name.rpartition(".")[2] + sysconfig.get_config_var("EXT_SUFFIX"))
    if not built.exists():
        return None
    try:
        recorded = built.with_name(source.stem + _core_build.HASH_SUFFIX).read_text("ascii")
    except OSError:
        return None
    return built if recorded.strip() == _core_build.digest(source) else None


class OptionalBuildExt(build_ext):
    """A failed compilation leaves the pure-Python modules in place, with one warning."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = JOBS

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers, ...
            _core_build.warn_pure(f"the build failed ({exc})")
            return
        # beside each compiled module (in the build and, editable, in the source tree): the
        # hash of the source it was compiled from
        for ext in self.extensions:
            source = _source(ext.name)
            name = Path(self.get_ext_filename(ext.name)).name
            for where in (Path(self.get_ext_fullpath(ext.name)), source.with_name(name)):
                if where.exists():
                    _core_build.write_source_hash(source, where)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        built = _built_beside(ext.name)
        target = Path(self.get_ext_fullpath(ext.name))
        if built is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            if built.resolve() != target.resolve():
                shutil.copy2(built, target)
            return
        if self.compiler.compiler_type == "unix":
            ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]
        try:
            super().build_extension(ext)
        except Exception as exc:
            _core_build.warn_pure(f"{ext.name} did not compile ({exc})")


def extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:
        _core_build.warn_pure("Cython is not installed")
        return []
    todo = [m for m in _core_build.COMPILED if _built_beside(m) is None]
    if todo:
        seconds = -(-SECONDS_PER_MODULE_CPU * len(todo) // JOBS)
        _tell(
            f"fabricsim: compiling the packet engine's core ({len(todo)} modules with Cython, "
            f"about {seconds} s on {JOBS} CPU{'s' if JOBS > 1 else ''}; once per source change)"
        )
    return cythonize(
        [str(_source(m)) for m in _core_build.COMPILED],
        language_level=3,
        quiet=True,
        nthreads=JOBS if len(todo) > 1 else 0,
        compiler_directives=_core_build.DIRECTIVES,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
