"""What an output directory may be, and writing one whole (DESIGN.md section 3).

An output directory holds exactly one fabricsim output of one *kind*: ``run`` (one run,
:meth:`fabricsim.metrics.results.Result.save`), ``compare`` (``fabricsim compare``), ``study``
(the default ARK study) or ``sweep`` (``fabricsim sweep``).  Every save writes a marker file,
:data:`MARKER` (``.fabricsim``, JSON ``{"kind": ...}``), so a later save recognises it.

The rules, checked before any simulation starts (:func:`check_out_dir`, writes nothing):

* an empty path, the current directory or one of its ancestors, an existing file, a path under a
  file, and a read-only directory (or one inside a read-only directory) are refused;
* a non-empty directory that is not a fabricsim output is refused, and left untouched;
* a previous ``run``/``compare``/``study`` output is *replaced whole*: the new output is written
  into a temporary sibling directory and swapped in (:meth:`OutDir.staging`), so no file of the
  old output survives and an interrupted save leaves the old output intact;
* a sweep directory is only resumed by the same sweep (``fabricsim.sweep`` checks its
  manifest); a run, compare or study output never replaces it, and a sweep never goes into a
  directory that holds another kind of output;
* one process at a time writes an output directory: :func:`claim_out_dir` (the command line,
  for the whole command) and :meth:`OutDir.staging` (every save) hold an OS lock
  (``fcntl.flock``) on a file beside it, ``.<name>.fabricsim-lock``; another process is
  refused in one line.  The kernel releases the lock when its process dies however it ends;
  the file is deleted when the lock is released.

Outputs written before the marker existed are recognised by their files (``summary.json`` +
``config.yaml``: a run; ``manifest.json``: a sweep; ``compare.csv`` + ``runs.csv``: a
comparison; ``study.json`` + ``comparison.csv``: a study).

Examples
--------
>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> with prepare_out_dir(root / "out", "run").staging() as tmp:
...     _ = (tmp / "summary.json").write_text("{}")
>>> sorted(p.name for p in (root / "out").iterdir())
['.fabricsim', 'summary.json']
>>> output_kind(root / "out")
'run'
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fabricsim.errors import ConfigError, as_storage_error

MARKER = ".fabricsim"
KINDS = ("run", "compare", "study", "sweep")
_TMP_TAG = ".fabricsim-"  # temporary siblings: .<name>.fabricsim-new-<pid>-<random>
_LOCK_TAG = ".fabricsim-lock"  # the lock file beside an output: .<name>.fabricsim-lock

_LEGACY = (  # (kind, files that together identify an output written before the marker)
    ("sweep", ("manifest.json",)),
    ("run", ("summary.json", "config.yaml")),
    ("compare", ("compare.csv", "runs.csv")),
    ("study", ("study.json", "comparison.csv")),
    ("study", ("sweep.csv", "sweep_table.csv")),
)


def output_kind(path: str | os.PathLike[str]) -> str | None:
    """The kind of fabricsim output in directory ``path``, or None if it is not one."""
    p = Path(path)
    marker = p / MARKER
    try:
        if marker.is_file():
            data = json.loads(marker.read_text(encoding="utf-8"))
            kind = data.get("kind") if isinstance(data, dict) else None
            return kind if kind in KINDS else None
        for kind, names in _LEGACY:
            if all((p / n).is_file() for n in names):
                return kind
    except (OSError, ValueError):
        return None
    return None


def _path_text(path: str | os.PathLike[str] | None, option: str, what: str) -> str:
    """The path as text; empty or NUL-containing paths refused (one line naming ``option``)."""
    raw = "" if path is None else os.fspath(path)
    if not raw.strip():
        raise _fail(option, "", f"empty path; name an output {what}")
    if "\x00" in raw:
        raise _fail(option, repr(raw), "the path contains a NUL byte")
    return raw


def _fail(option: str, raw: str, why: str) -> ConfigError:
    return ConfigError(f"{option} {raw}: {why}" if raw else f"{option}: {why}")


def _read_only(path: Path) -> bool:
    """Not writable by us, or marked read-only (no write bit at all; honoured even for root)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return True
    need = os.W_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)
    return not os.access(path, need) or not mode & 0o222


def _nearest_existing(path: Path) -> Path:
    cur = path
    while not os.path.lexists(cur):
        if cur.parent == cur:
            break
        cur = cur.parent
    return cur


def check_out_dir(
    path: str | os.PathLike[str] | None, kind: str = "run", *, option: str = "--out"
) -> Path:
    """Refuse an output directory that cannot receive a ``kind`` output; write nothing.

    Cheap (a few ``stat`` calls): call it before a run starts so a bad ``--out`` fails at once.

    Parameters
    ----------
    path
        The directory the user named.
    kind
        ``run``, ``compare``, ``study`` or ``sweep``.
    option
        The option named in the error message.

    Returns
    -------
    Path
        The absolute directory to write (a symlink in the last component followed).

    Raises
    ------
    ConfigError
        One line naming ``option``: empty path, the current directory, a file, a path under a
        file, a read-only directory, a non-empty directory that is not a fabricsim output, a
        sweep directory for another kind (or another kind's output for a sweep).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    raw = _path_text(path, option, "directory")
    try:
        return _check(raw, kind, option)
    except OSError as exc:  # ENAMETOOLONG, ELOOP, EACCES on a component, ...
        why = exc.strerror or type(exc).__name__
        raise _fail(option, raw, f"cannot use this path ({why})") from None


def _check(raw: str, kind: str, option: str) -> Path:
    target = Path(os.path.abspath(raw))
    if target.is_symlink() and target.is_dir():
        target = Path(os.path.realpath(target))
    real = Path(os.path.realpath(target))
    cwd = Path(os.path.realpath(os.getcwd()))
    if cwd == real or real in cwd.parents:
        raise _fail(
            option, raw, "is the current directory (or contains it); name a directory to write"
        )
    here = _nearest_existing(target)
    if here != target:  # the directory does not exist yet: we create it under `here`
        if not here.is_dir():
            raise _fail(option, raw, f"{here} is a file, not a directory")
        if _read_only(here):
            raise _fail(option, raw, f"cannot create it: {here} is read-only")
        return target
    if not target.is_dir():
        what = "a file" if target.is_file() else "not a directory"
        raise _fail(option, raw, f"is {what}; name a directory")
    if _read_only(target):
        raise _fail(option, raw, "is a read-only directory")
    if kind != "sweep" and _read_only(target.parent):
        raise _fail(option, raw, f"cannot replace it: {target.parent} is read-only")
    if not any(target.iterdir()):
        return target
    found = output_kind(target)
    if found is None:
        raise _fail(
            option,
            raw,
            "not empty and not a fabricsim output; refusing to replace it "
            "(use a new or empty directory)",
        )
    if kind == "sweep" and found != "sweep":
        raise _fail(
            option, raw, f"holds a fabricsim {found} output, not a sweep; use a new directory"
        )
    if kind != "sweep" and found == "sweep":
        raise _fail(
            option,
            raw,
            f"holds a sweep (resume it with the same `fabricsim sweep`); a {kind} output "
            "does not replace it; use a new directory",
        )
    return target


def check_out_file(path: str | os.PathLike[str] | None, *, option: str = "--out") -> Path:
    """Refuse a path that cannot receive an output *file* (``export-trace --out``); write nothing.

    Refused: an empty path, a directory, a path under a file, a special file (``/dev/null``
    is allowed: writing there is what the user asked), a read-only file or directory.  An
    existing regular file is replaced.  Missing parent directories are fine (created by
    the writer).

    Returns
    -------
    Path
        The absolute file path.
    """
    raw = _path_text(path, option, "file")
    try:
        target = Path(os.path.abspath(raw))
        if raw.endswith(("/", os.sep)) or target.is_dir():
            raise _fail(option, raw, "is a directory; name a file")
        if os.path.lexists(target):
            if os.path.realpath(target) == os.devnull:
                return target
            if os.path.islink(target):
                raise _fail(
                    option,
                    raw,
                    "is a symbolic link; name a regular file (no writing through links)",
                )
            if not target.is_file():
                raise _fail(option, raw, "is not a regular file")
            if _read_only(target):
                raise _fail(option, raw, "is a read-only file")
            if _read_only(target.parent):
                raise _fail(option, raw, f"cannot replace it: {target.parent} is read-only")
            return target
        here = _nearest_existing(target.parent)
        if not here.is_dir():
            raise _fail(option, raw, f"{here} is a file, not a directory")
        if _read_only(here):
            raise _fail(option, raw, f"cannot create it: {here} is read-only")
        return target
    except OSError as exc:
        raise _fail(
            option, raw, f"cannot use this path ({exc.strerror or type(exc).__name__})"
        ) from None


def marker_text(kind: str) -> str:
    """The content of the marker file of a ``kind`` output."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    return json.dumps({"kind": kind}) + "\n"


def write_marker(directory: str | os.PathLike[str], kind: str) -> None:
    """Write ``directory/.fabricsim`` recording ``kind``."""
    (Path(directory) / MARKER).write_text(marker_text(kind), encoding="utf-8")


@dataclass(frozen=True)
class OutDir:
    """A checked output directory (from :func:`prepare_out_dir`); write it with :meth:`staging`."""

    path: Path
    kind: str
    option: str = "--out"
    given: str = ""

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A temporary sibling directory to write the output into, swapped in on success.

        On a normal exit the marker is written, the directory is checked again and swapped
        with the old output (atomically where the OS can: ``renameat2(RENAME_EXCHANGE)``) and
        the old output deleted.  On any exception (``KeyboardInterrupt`` included) the
        temporary directory is deleted, directories created for it are removed again, and a
        previous output is left as it was.  The directory's lock (:func:`claim`) is held
        meanwhile.  An :class:`OSError` that is the machine's refusal to store (a full disk,
        EACCES, EROFS, ...) comes out as a :class:`~fabricsim.errors.StorageError` naming the
        directory.
        """
        lock = claim(self.path, option=self.option, given=self.given)
        try:
            with self._swapped() as tmp:
                yield tmp
        except OSError as exc:  # a full disk, a read-only file system: one line, exit 2
            err = as_storage_error(exc, self.given or self.path)
            if err is exc:
                raise
            raise err from exc
        finally:
            lock.release()

    @contextlib.contextmanager
    def _swapped(self) -> Iterator[Path]:
        created = _make_parents(self.path.parent, self.option, self.given)
        tmp: Path | None = None
        try:
            _remove_stale_siblings(self.path)
            tmp = Path(
                tempfile.mkdtemp(
                    prefix=f".{self.path.name}{_TMP_TAG}new-{os.getpid()}-", dir=self.path.parent
                )
            )
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700: as mkdir would, by umask
            yield tmp
            write_marker(tmp, self.kind)
            check_out_dir(self.path, self.kind, option=self.option)  # still acceptable?
            _swap_in(tmp, self.path)
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)  # the new output, or the old one swapped out
            for d in reversed(created):
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # the old output, swapped out


def prepare_out_dir(
    path: str | os.PathLike[str] | None, kind: str, *, option: str = "--out"
) -> OutDir:
    """Check ``path`` for a ``kind`` output (:func:`check_out_dir`); nothing is written yet.

    ``with prepare_out_dir(path, kind).staging() as tmp:`` then writes the output into ``tmp``
    and replaces ``path`` whole when the block ends without an exception.
    """
    target = check_out_dir(path, kind, option=option)
    return OutDir(target, kind, option, os.fspath(path) if path is not None else "")


@contextlib.contextmanager
def replacing(
    path: str | os.PathLike[str] | None, kind: str, *, option: str = "--out"
) -> Iterator[Path]:
    """``prepare_out_dir(path, kind).staging()`` in one call."""
    with prepare_out_dir(path, kind, option=option).staging() as tmp:
        yield tmp


# -- one writer per output directory ---------------------------------------------------------


class OutLock:
    """This process's lock on one output directory (from :func:`claim`); re-entrant: each
    :func:`claim` of the same directory is matched by one :meth:`release`."""

    def __init__(
        self, key: str, fd: int, path: Path | None, created: list[Path], given: str
    ) -> None:
        self.key, self.fd, self.path, self.created, self.given = key, fd, path, created, given
        self.count = 1

    def release(self) -> None:
        """Release one claim; the last one deletes the lock file (while still holding the
        lock: see :func:`claim`), closes it and removes the directories made for it."""
        self.count -= 1
        if self.count > 0:
            return
        _HELD.pop(self.key, None)
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
        for d in reversed(self.created):  # empty again unless the output went there
            with contextlib.suppress(OSError):
                d.rmdir()


_HELD: dict[str, OutLock] = {}  # absolute directory -> this process's lock on it
_CLAIMED: list[OutLock] = []  # what claim_out_dir took, released by release_claims


def lock_file(directory: Path) -> Path:
    """The lock file of output directory ``directory``: beside it, so it survives the swap."""
    return directory.parent / f".{directory.name}{_LOCK_TAG}"


def claim(
    path: str | os.PathLike[str], *, option: str = "--out", given: str | None = None
) -> OutLock:
    """Lock output directory ``path`` for this process, or refuse in one line if another
    process holds it.

    The lock is ``flock(LOCK_EX | LOCK_NB)`` on :func:`lock_file` (missing parent directories
    are made for it and removed again on release if still empty); the holder's pid is written
    in it for the refusal.  The kernel drops the lock when the holder dies (SIGKILL included);
    a stale file is simply locked again.  The holder deletes the file before it unlocks, so a
    process that locked a file no longer at the path (the inode differs) tries again.  A
    directory whose parent cannot hold the file (read-only) is locked itself if it exists.

    Raises
    ------
    ConfigError
        ``option given: another fabricsim command (pid N) is writing this directory; ...``
    """
    target = Path(os.path.abspath(path))
    held = _HELD.get(str(target))
    if held is not None:
        held.count += 1
        return held
    shown = os.fspath(path) if given is None else given
    created = _make_parents(target.parent, option, shown)
    try:
        fd, where = _locked_fd(target, option, shown)
    except BaseException:
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    lock = OutLock(str(target), fd, where, created, shown)
    _HELD[lock.key] = lock
    return lock


def _locked_fd(target: Path, option: str, shown: str) -> tuple[int, Path | None]:
    """A descriptor holding the lock of ``target``, and the lock file (None: the directory
    itself, or -1 and None when nothing can be locked)."""
    where = lock_file(target)
    while True:
        try:
            fd = os.open(where, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:  # a read-only parent (a sweep may resume there): the directory itself
            try:
                fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:  # not there (or not ours): nothing to lock
                return -1, None
            _flock_or_refuse(fd, None, option, shown)
            return fd, None
        _flock_or_refuse(fd, where, option, shown)
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(where))
        except OSError:
            same = False
        if same:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd, where
        os.close(fd)  # its holder deleted it as we locked it: lock the new file


def _flock_or_refuse(fd: int, where: Path | None, option: str, shown: str) -> None:
    """Lock ``fd`` or refuse: another process holds it.  A file system without locks
    (``ENOLCK``, ...) goes on unlocked, as before locks existed."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            return
        holder = ""
        if where is not None:
            with contextlib.suppress(OSError, ValueError):
                holder = f" (pid {int(os.pread(fd, 32, 0).decode().strip())})"
        os.close(fd)
        raise _fail(
            option,
            shown,
            f"another fabricsim command{holder} is writing this directory; wait for it to "
            "end or name another directory",
        ) from None


def claim_out_dir(
    path: str | os.PathLike[str] | None, kind: str = "run", *, option: str = "--out"
) -> Path:
    """:func:`check_out_dir`, then :func:`claim` the directory until :func:`release_claims`
    (the command line holds its ``--out`` for the whole command: a second command with the
    same ``--out`` is refused at once instead of replacing the first one's output)."""
    target = check_out_dir(path, kind, option=option)
    _CLAIMED.append(claim(target, option=option, given=os.fspath(path)))  # type: ignore[arg-type]
    return target


def claimed() -> list[str]:
    """The directories :func:`claim_out_dir` holds, as the user named them."""
    return [c.given for c in _CLAIMED]


def release_claims() -> None:
    """Release every claim :func:`claim_out_dir` took (the command line, when a command ends)."""
    while _CLAIMED:
        _CLAIMED.pop().release()


def make_sweep_dir(path: Path) -> list[Path]:
    """Create a sweep directory (and missing parents) with its marker; the directories made."""
    created = _make_parents(path, "--out", str(path))
    if not (path / MARKER).exists():
        write_marker(path, "sweep")
    return created


# -- helpers -----------------------------------------------------------------------------------


def _make_parents(directory: Path, option: str, given: str) -> list[Path]:
    """``mkdir -p directory``; the directories created, outermost first."""
    missing = []
    cur = directory
    while not cur.exists():
        missing.append(cur)
        if cur.parent == cur:
            break
        cur = cur.parent
    made: list[Path] = []
    try:
        for d in reversed(missing):
            d.mkdir()
            made.append(d)
    except FileExistsError:
        pass
    except OSError as exc:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise _fail(option, given, f"cannot create {directory} ({exc.strerror})") from None
    return made


_STALE = re.compile(r"\.fabricsim-(?:new|old)-(\d+)-")


def _umask() -> int:
    """The process's umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_stale_siblings(path: Path) -> None:
    """Delete temporary siblings left by a save that was killed (its process is gone)."""
    prefix = f".{path.name}{_TMP_TAG}"
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        m = _STALE.match(entry.name[len(path.name) + 1 :])
        if m is None or pid_alive(int(m.group(1))):
            continue
        shutil.rmtree(entry, ignore_errors=True)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):  # no /proc (not Linux): kill(0) said it exists
        return True


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directory entries (Linux ``renameat2``); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_in(tmp: Path, dest: Path) -> None:
    """Put ``tmp`` at ``dest``; afterwards ``tmp`` holds the old output (or nothing)."""
    try:
        st = dest.lstat()
    except FileNotFoundError:
        os.rename(tmp, dest)
        return
    if not stat.S_ISDIR(st.st_mode):  # checked before; a race put something else there
        raise ConfigError(f"--out {dest}: is not a directory")
    if _exchange(tmp, dest):
        return
    old = Path(
        tempfile.mkdtemp(prefix=f".{dest.name}{_TMP_TAG}old-{os.getpid()}-", dir=dest.parent)
    )
    os.rmdir(old)
    os.rename(dest, old)
    try:
        os.rename(tmp, dest)
    except BaseException:
        os.rename(old, dest)
        raise
    os.rename(old, tmp)  # so the caller deletes the old output as `tmp`
