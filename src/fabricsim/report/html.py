"""A self-contained HTML page: sections with stable ids, tables, figures (inline SVG or PNG).

No scripts, no external stylesheets, fonts or images: figures are inline SVG or
``data:image/png;base64`` URIs, so the page works offline and from a mail attachment.
"""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.units import human_bytes, seconds_unit

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1100px;
padding:0 1.2em 3em;color:#1d2330;line-height:1.4}
header{border-bottom:2px solid #3b5bdb;margin-bottom:1em}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{font-size:1.25em;margin:1.6em 0 .4em;color:#3b5bdb}
h3{font-size:1.05em;margin:1.1em 0 .3em}
nav a{margin-right:.9em;font-size:.9em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0 1em}
th,td{border:1px solid #d0d5e0;padding:.2em .55em;text-align:right}
th{background:#eef1f8}td:first-child,th:first-child{text-align:left}
pre{background:#f5f6fa;border:1px solid #d0d5e0;padding:.8em;overflow-x:auto;font-size:.8em}
img,figure svg{max-width:100%;height:auto;border:1px solid #e3e6ee}
p.note{color:#5a6275;font-size:.9em;margin:.2em 0 .6em}
p.warn{color:#8a3b00;background:#fff4e5;border-left:3px solid #e8590c;padding:.3em .6em;
margin:.4em 0 .8em}
"""


@dataclass
class Section:
    """One ``<section id=...>`` of the page; ``figures`` are (file name, SVG or PNG bytes)."""

    id: str
    title: str
    parts: list[str] = field(default_factory=list)
    figures: list[tuple[str, bytes]] = field(default_factory=list)

    def note(self, text: str) -> Section:
        self.parts.append(f'<p class="note">{html.escape(text)}</p>')
        return self

    def warn(self, text: str) -> Section:
        """A line the reader must not miss (e.g. flows that did not complete)."""
        self.parts.append(f'<p class="warn">{html.escape(text)}</p>')
        return self

    def table(self, df: pd.DataFrame, caption: str | None = None, max_rows: int = 60) -> Section:
        if caption:
            self.parts.append(f"<h3>{html.escape(caption)}</h3>")
        self.parts.append(table_html(df, max_rows))
        return self

    def figure(self, name: str, data: bytes, alt: str, fmt: str | None = None) -> Section:
        """Add a figure: SVG inline in the page, PNG as a ``data:`` URI; both are also
        written to ``figures/<name>.<fmt>`` (``fmt`` None: read off the bytes)."""
        if fmt is None:
            fmt = "svg" if data.lstrip()[:5] in (b"<?xml", b"<svg ") else "png"
        self.figures.append((f"{name}.{fmt}", data))
        if fmt == "svg":
            text = data.decode("utf-8")
            start = text.find("<svg")
            svg = re.sub(r"<metadata>.*?</metadata>\s*", "", text[start:] if start >= 0 else text,
                         count=1, flags=re.S)  # fmt: skip
            self.parts.append(f'<figure role="img" aria-label="{html.escape(alt)}">{svg}</figure>')
            return self
        b64 = base64.b64encode(data).decode("ascii")
        self.parts.append(
            f'<figure><img src="data:image/png;base64,{b64}" alt="{html.escape(alt)}"></figure>'
        )
        return self

    def details(self, summary: str, df: pd.DataFrame, max_rows: int = 200) -> Section:
        """A table folded under a one-line ``summary`` (``<details>``; opens on a click)."""
        self.parts.append(
            f"<details><summary>{html.escape(summary)}</summary>{table_html(df, max_rows)}"
            "</details>"
        )
        return self

    def pre(self, text: str, caption: str | None = None) -> Section:
        if caption:
            self.parts.append(f"<h3>{html.escape(caption)}</h3>")
        self.parts.append(f"<pre>{html.escape(text)}</pre>")
        return self

    def render(self) -> str:
        body = "\n".join(self.parts)
        return (
            f'<section id="{html.escape(self.id)}">\n<h2>{html.escape(self.title)}</h2>\n'
            f"{body}\n</section>"
        )


def _cell(value: Any) -> str:
    """A table cell for people: counts with thousands separators (``4,194,304``), other
    numbers with four significant digits, never an exponent for values from 0.001 up.

    >>> [_cell(v) for v in (4194304.0, 4_000_000, 0.123456, 1234.5, float("nan"), True, "x")]
    ['4,194,304', '4,000,000', '0.1235', '1,234', '', 'True', 'x']
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        v = float(value)
        if not math.isfinite(v):
            return str(v)
        if v.is_integer() and abs(v) < 1e18:
            return f"{int(v):,}"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(value)


def table_html(df: pd.DataFrame, max_rows: int = 60) -> str:
    """An escaped HTML table of ``df`` (no index), at most ``max_rows`` rows."""
    shown = df.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    rows = []
    for rec in shown.itertuples(index=False):
        rows.append("<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in rec) + "</tr>")
    more = (
        f'<p class="note">{len(df) - max_rows} more rows not shown.</p>'
        if len(df) > max_rows
        else ""
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def scaled(df: pd.DataFrame) -> pd.DataFrame:
    """Seconds columns (``*_s``) in the unit their values read best in, named so
    (``fct_mean_s`` -> ``fct_mean (ms)``); other columns as they are."""
    out = df.copy()
    for col in df.columns:
        if not (isinstance(col, str) and col.endswith("_s")):
            continue
        values = pd.to_numeric(df[col], errors="coerce")
        if values.isna().all() or not pd.api.types.is_numeric_dtype(df[col]):
            continue
        factor, unit = seconds_unit(float(values.abs().median()))
        out = out.rename(columns={col: f"{col[:-2]} ({unit})"})
        out[f"{col[:-2]} ({unit})"] = (values / factor).round(3)
    return out


def with_units(df: pd.DataFrame) -> pd.DataFrame:
    """A table for people: byte columns (``*bytes*``) as sizes with their unit (``4.19 MB``),
    utilization as a percentage, seconds columns as :func:`scaled`, the rest as they are
    (cells: :func:`_cell`)."""
    out = scaled(df)
    for col in out.columns:
        if not (isinstance(col, str) and pd.api.types.is_numeric_dtype(out[col])):
            continue
        if "bytes" in col:
            out[col] = [_cell(v) if _missing(v) else human_bytes(float(v)) for v in out[col]]
        elif col.startswith("utilization"):  # a fraction of the link's rate
            out[col] = [_cell(v) if _missing(v) else f"{100 * float(v):.0f} %" for v in out[col]]
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def dict_table(data: dict[str, Any], key: str = "metric", value: str = "value") -> pd.DataFrame:
    """A two-column table of a flat dict's scalar entries."""
    rows = [(k, v) for k, v in data.items() if not isinstance(v, dict | list)]
    return pd.DataFrame(rows, columns=[key, value])


def render_page(title: str, subtitle: str, sections: list[Section]) -> str:
    """The whole HTML document."""
    nav = " ".join(f'<a href="#{html.escape(s.id)}">{html.escape(s.title)}</a>' for s in sections)
    body = "\n".join(s.render() for s in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<title>{html.escape(title)}</title>\n<link rel="icon" href="data:,">\n'
        f"<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{html.escape(title)}</h1><p class="note">{html.escape(subtitle)}</p>'
        f"<nav>{nav}</nav></header>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )
