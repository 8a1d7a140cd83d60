"""The user documentation (docs/*.md and README.md) speaks to users, not to the developers.

It must not cite the seed documents by their file names (``001_*.txt``), issue numbers, the
development process ("steering", "the lead") or paths of one machine (``/work/``,
``../shared``): a reader of the repository has none of them. ``docs/history.md`` is the
development history and may name issues; it is excluded from the issue rule only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]

# (rule name, pattern, applies to history.md too)
RULES = [
    ("seed file name", re.compile(r"\b00[0-3]_"), True),
    ("issue number", re.compile(r"\b(?:issues?|PR) #?\d+", re.IGNORECASE), False),
    ("steering repository", re.compile(r"steering", re.IGNORECASE), True),
    ("the lead", re.compile(r"\bthe lead\b", re.IGNORECASE), True),
    ("machine path", re.compile(r"/work/|\.\./shared"), True),
]


def insider_references(path: Path) -> list[str]:
    """Return ``"file:line: rule: text"`` for each insider reference in one document."""
    found = []
    history = path.name == "history.md"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for name, pattern, everywhere in RULES:
            if (everywhere or not history) and pattern.search(line):
                found.append(f"{path.name}:{number}: {name}: {line.strip()[:80]}")
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_docs_have_no_insider_references(path):
    assert insider_references(path) == []


@pytest.mark.parametrize(
    "line",
    [
        "as `001_*.txt` Fig. 2 shows",
        "the incremental kernel (issue 14)",
        "see issues 13 and 14",
        "DESIGN.md (in the steering repo)",
        "see the report to the lead",
        "python /work/shared/tools/check_layers.py",
        "python ../shared/tools/check_layers.py",
    ],
)
def test_each_rule_catches_its_example(tmp_path, line):
    doc = tmp_path / "x.md"
    doc.write_text(f"A line.\n{line}\n", encoding="utf-8")
    assert len(insider_references(doc)) == 1


def test_user_text_passes(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("ARK (Lin et al., arXiv:2610.41160) with 10 seeds; 95 % CI; leaf0.\n")
    assert insider_references(doc) == []
