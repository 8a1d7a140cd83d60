"""Build hook: compile the packet engine's hot modules with Cython when it and a C compiler are
available; otherwise install the same modules as plain Python (they are the readable reference
and run unchanged).  The modules and their type declarations (``.pxd`` beside each ``.py``) are
listed in ``src/fabricsim/_core_build.py``; everything else is in ``pyproject.toml``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, str(Path(__file__).parent / "src" / "fabricsim"))
import _core_build  # noqa: E402  (the list of compiled modules, shared with the runtime check)


class OptionalBuildExt(build_ext):
    """A failed compilation leaves the pure-Python modules in place, with one warning."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers, ...
            _core_build.warn_pure(f"the build failed ({exc})")
            return
        # beside each compiled module (in the build and, editable, in the source tree): the
        # hash of the source it was compiled from
        for ext in self.extensions:
            source = Path("src", *ext.name.split(".")).with_suffix(".py")
            name = Path(self.get_ext_filename(ext.name)).name
            for where in (Path(self.get_ext_fullpath(ext.name)), source.with_name(name)):
                if where.exists():
                    _core_build.write_source_hash(source, where)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
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
    return cythonize(
        [f"src/{m.replace('.', '/')}.py" for m in _core_build.COMPILED],
        language_level=3,
        quiet=True,
        compiler_directives=_core_build.DIRECTIVES,
    )


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
