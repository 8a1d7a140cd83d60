"""The compiled modules declare each class's attributes in three places: the ``.pxd`` (the C
fields of the compiled build), ``__slots__`` (the pure-Python build) and the assignments in
its methods.  This test fails when they drift: an attribute in one and not the other runs in
one build and fails (or silently grows a ``__dict__``) in the other.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from fabricsim import _core_build

SRC = Path(_core_build.__file__).resolve().parent.parent

_CLASS = re.compile(r"^cdef class (\w+)(?:\((\w+)\))?\s*:", re.M)
_FIELD = re.compile(r"^\s+cdef\s+(?:public\s+|readonly\s+)?(?!class\b)([^()]*?)$")


def _pxd_fields(text: str) -> dict[str, tuple[str | None, set[str]]]:
    """class name -> (base class or None, its C fields) from a ``.pxd``."""
    out: dict[str, tuple[str | None, set[str]]] = {}
    blocks = list(_CLASS.finditer(text))
    for i, m in enumerate(blocks):
        end = blocks[i + 1].start() if i + 1 < len(blocks) else len(text)
        fields: set[str] = set()
        for line in text[m.end() : end].splitlines():
            if line and not line[0].isspace():
                break  # the class block ended (a module-level declaration)
            f = _FIELD.match(line)
            if f is None or "(" in line:
                continue  # a method, a decorator, a comment
            decl = re.sub(r"\[[^\]]*\]", "", f.group(1).split("#")[0]).strip()
            # "long long[::1] heap, free" / "public Packet head, tail": names after the type
            names = decl.split(",")
            first = names[0].split()
            fields.update([first[-1], *(n.strip() for n in names[1:])])
        out[m.group(1)] = (m.group(2), {n for n in fields if n.isidentifier()})
    return out


def _py_classes(text: str) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)}


def _slots(node: ast.ClassDef) -> set[str] | None:
    for item in node.body:
        if isinstance(item, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in item.targets
        ):
            return set(ast.literal_eval(item.value))
    return None


def _assigned(node: ast.ClassDef) -> set[str]:
    """``self.X`` names its methods assign (plain, augmented or annotated)."""
    names: set[str] = set()
    for fn in node.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
            continue
        me = fn.args.args[0].arg
        for n in ast.walk(fn):
            targets: list[ast.expr] = []
            if isinstance(n, ast.Assign):
                targets = list(n.targets)
            elif isinstance(n, ast.AugAssign | ast.AnnAssign):
                targets = [n.target]
            for t in targets:
                for leaf in ast.walk(t):
                    if (
                        isinstance(leaf, ast.Attribute)
                        and isinstance(leaf.value, ast.Name)
                        and leaf.value.id == me
                    ):
                        names.add(leaf.attr)
    return names


@functools.cache
def _tables() -> tuple[dict[str, tuple[str | None, set[str]]], dict[str, ast.ClassDef]]:
    """Every compiled module's C classes (name -> base, fields) and their Python classes: a
    class may extend one of another module (``cimport``)."""
    declared: dict[str, tuple[str | None, set[str]]] = {}
    classes: dict[str, ast.ClassDef] = {}
    for module in _core_build.COMPILED:
        base = SRC / Path(*module.split("."))
        declared.update(_pxd_fields(base.with_suffix(".pxd").read_text()))
        classes.update(_py_classes(base.with_suffix(".py").read_text()))
    return declared, classes


def _cases() -> list[tuple[str, str]]:
    cases = []
    for module in _core_build.COMPILED:
        pxd = (SRC / Path(*module.split("."))).with_suffix(".pxd")
        for cls in _pxd_fields(pxd.read_text()):
            cases.append((module, cls))
    return cases


@pytest.mark.parametrize(("module", "cls"), _cases())
def test_pxd_slots_and_assignments_agree(module: str, cls: str) -> None:
    declared, classes = _tables()
    assert cls in classes, f"{module}.pxd declares {cls}, which {module}.py does not define"
    parent, own = declared[cls]
    inherited: set[str] = set()
    while parent is not None and parent in declared:
        parent, fields = declared[parent]
        inherited |= fields
    node = classes[cls]
    slots = _slots(node)
    if slots is not None:
        assert slots == own, (
            f"{module}.{cls}: __slots__ and the .pxd differ: only in __slots__ "
            f"{sorted(slots - own)}, only in the .pxd {sorted(own - slots)}"
        )
    stray = _assigned(node) - own - inherited
    assert not stray, f"{module}.{cls} assigns {sorted(stray)}, which its .pxd does not declare"
    unused = own - _assigned(node) - _assigned_in_subclasses(cls, classes, declared)
    assert not unused, f"{module}.{cls}: the .pxd declares {sorted(unused)}, never assigned"


def _assigned_in_subclasses(
    cls: str, classes: dict[str, ast.ClassDef], declared: dict[str, tuple[str | None, set[str]]]
) -> set[str]:
    names: set[str] = set()
    for name, (parent, _) in declared.items():
        if parent == cls and name in classes:
            names |= _assigned(classes[name]) | _assigned_in_subclasses(name, classes, declared)
    return names


def test_the_checker_sees_a_drift() -> None:
    """The parser finds fields, so the test above can fail."""
    pxd = "cdef class A:\n    cdef public long long x, y\n    cdef object z\n    cpdef f(self)\n"
    assert _pxd_fields(pxd) == {"A": (None, {"x", "y", "z"})}
    node = _py_classes("class A:\n    __slots__ = ('x',)\n    def f(self):\n        self.w = 1\n")
    assert _slots(node["A"]) == {"x"} and _assigned(node["A"]) == {"w"}
