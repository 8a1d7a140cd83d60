"""Did-you-mean: the known word closest to a mistyped key or value (:mod:`difflib`).

Below every other config module, so validation, ``--set`` and the name registries share it.

Examples
--------
>>> closest("spine", ["spines", "leaves", "k"])
'spines'
>>> closest("ECMP", ["ecmp", "ark"])
'ecmp'
>>> did_you_mean("fat-tree", ["leaf_spine", "fat_tree"])
'; did you mean fat_tree?'
>>> did_you_mean("zzz", ["ecmp", "ark"])
''
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = ["closest", "did_you_mean"]


def _fold(text: str) -> str:
    return text.lower().replace("-", "_").replace(" ", "_")


def closest(word: Any, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known word ``word`` most likely stands for: same up to case and ``-``/``_``/space
    first, else the closest by :func:`difflib.get_close_matches`; None if none is close."""
    if not isinstance(word, str) or not word:
        return None
    names = [k for k in dict.fromkeys(known) if k]
    folded = {_fold(k): k for k in names}
    if _fold(word) in folded:
        return folded[_fold(word)]
    match = difflib.get_close_matches(_fold(word), list(folded), n=1, cutoff=cutoff)
    return folded[match[0]] if match else None


def did_you_mean(word: Any, known: Iterable[str]) -> str:
    """``'; did you mean X?'`` for the closest known word, or ``''``."""
    best = closest(word, known)
    return f"; did you mean {best}?" if best is not None and best != word else ""
