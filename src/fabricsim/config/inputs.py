"""Input files a scenario reads (a trace, a matrix, prompt lengths, a GPU profile): resolved
paths and content hashes, so that a run's record does not depend on how a path was spelled.

* A relative path that names an existing file (from the working directory; a YAML file's own
  paths are first looked up beside the file by the loader) is recorded as its absolute path,
  so a run's ``config.yaml`` reruns from any directory.
* The scenario's ``inputs`` maps each input's resolved path to the SHA-256 of its content
  (a directory: of its files' names and contents), filled in at load.  Rerunning a recorded
  scenario whose file changed since is refused, naming the key.
* :meth:`Scenario.config_hash` hashes an input's content in place of its path: the same
  scenario and seed give the same ``config_hash`` whether the path was relative or absolute.

Examples
--------
>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "t.csv").write_text("src,dst,size_bytes,start_s\\n0,1,100,0\\n")
>>> content_sha256(str(d / "t.csv"))[:12]
'4decb99cf749'
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

INPUT_FIELDS: dict[str, tuple[str, ...]] = {
    "trace": ("path",),
    "moe": ("path",),
    "chakra": ("path",),
    "kv_cache": ("prompt_path", "gpu_profile_path"),
}
"""``workload.kind`` -> the workload keys that name an input file or directory."""

_CACHE: dict[tuple[str, int, int], str] = {}


def resolved(path: str) -> str:
    """``path`` made absolute when it names an existing file or directory; else as given."""
    p = Path(path)
    try:
        return str(p.resolve()) if p.exists() else path
    except (OSError, RuntimeError):  # a symlink loop, an unreadable parent: the reader says so
        return path


def content_sha256(path: str) -> str | None:
    """SHA-256 (hex) of a file's bytes, or of a directory's relative file names and contents;
    None when it cannot be read (the workload's reader reports that in one line)."""
    p = Path(path)
    try:
        st = p.stat()
        key = (str(p), st.st_mtime_ns, st.st_size)
        if key in _CACHE:
            return _CACHE[key]
        digest = hashlib.sha256()
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    f = Path(root) / name
                    digest.update(str(f.relative_to(p)).encode() + b"\0")
                    _update(digest, f)
        else:
            _update(digest, p)
    except OSError:
        return None
    _CACHE[key] = digest.hexdigest()
    return _CACHE[key]


def _update(digest: hashlib._Hash, path: Path) -> None:
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)


def resolve_inputs(workload: Any, recorded: dict[str, str]) -> dict[str, str]:
    """Make ``workload``'s input paths absolute (in place, as derived values) and return their
    resolved path -> SHA-256; :class:`ValueError` naming the key when ``recorded`` (a recorded
    scenario's ``inputs``) has another hash for the same path."""
    found: dict[str, str] = {}
    for name in INPUT_FIELDS.get(workload.kind, ()):
        given = getattr(workload, name)
        if not given:
            continue
        path = resolved(given)
        if path != given:
            workload._derive(name, path)
        digest = content_sha256(path)
        if digest is None:
            continue
        before = recorded.get(path)
        if before is not None and before != digest:
            raise ValueError(
                f"workload.{name}: {path} changed since this scenario was recorded (SHA-256 "
                f"{digest[:12]}..., recorded {before[:12]}...); restore it, or remove its entry "
                "from inputs"
            )
        found[path] = digest
    return found


def by_content(data: dict[str, Any]) -> dict[str, Any]:
    """A scenario dict (``to_dict``) with each input path replaced by ``sha256:<hex>`` of its
    content and ``inputs`` dropped: what :meth:`Scenario.config_hash` hashes."""
    hashes = data.pop("inputs", {})
    workload = data.get("workload", {})
    for name in INPUT_FIELDS.get(workload.get("kind", ""), ()):
        path = workload.get(name)
        if path in hashes:
            workload[name] = f"sha256:{hashes[path]}"
    return data
