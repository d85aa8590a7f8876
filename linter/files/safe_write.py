"""Writing a file trainlint rewrites, so that the file is never lost (``suggest --write-to``, ``check --fix``).

The one way trainlint writes into a user's tree. The API::

    snap = snapshot(path)                       # read once: .text (as the readers normalise it), .hash
    new_text = edit(snap.text)                  # the caller's change, on the normalised text
    result = write_back(path, new_text, snap.hash)          # in place
    before = snapshot_target(out)               # another file: what it holds now (or that it is absent)
    result = write_back(path, new_text, snap.hash, to=out, target=before)
    data = render_like(path, new_text, snap.hash)           # the bytes that would be written (for ``-``)

``expected_hash`` is :func:`text_hash` of the text the change was computed from: the text as
:func:`trainlint.files.sources.read_source` returns it (LF line ends, no BOM), so a caller that holds a
``Document`` can compute it from ``document.text`` without reading the file again.

What :func:`write_back` guarantees:

* The new text is encoded as the file is: UTF-8 with or without a BOM, UTF-16/32 with their BOM;
  line ends as the file has them, line by line when they are mixed (an unchanged line keeps its
  own ``\\r\\n``/``\\r``/``\\n``; a new or changed line takes the one of the line before it).
* The bytes go to a temporary file in the target's own directory (so the rename cannot cross a
  file system), are flushed and ``fsync``-ed, take the target's mode, and replace the target with
  ``os.replace`` (atomic on POSIX); the directory is fsync-ed after. A symlink is kept: the file it
  points to is replaced, when that file lies in the checkout the link is in
  (:mod:`trainlint.files.checkout`); a symlink out of the checkout is refused. A file without write
  permission (mode 0444) is refused, not replaced through its directory. On a full disk, a failing
  write or a kill at any point, the target holds either its old bytes or its new bytes, never a
  part; a failed write removes its temporary file.
* Just before replacing, the file the text came from is read again and its text hashed: when it
  changed since ``expected_hash`` was taken (an editor saved it, another tool rewrote it), nothing
  is written and :class:`WriteConflict` says so.
* A write ``to=`` another file checks that file too: :func:`snapshot_target` records what it held
  (the hash of its bytes, or that it did not exist) when the caller decided to write it, and just
  before replacing it is read again; when it changed, appeared, vanished or its symlink now points
  elsewhere, nothing is written and :class:`WriteConflict` says so (its content is not lost to a
  write that was planned against an older state).
* Every failure is a :class:`WriteBackError` with a one-line message (the CLI prints it and exits 2).

A change between the last check and ``os.replace`` (microseconds) cannot be detected without a
lock no editor takes; that window is as small as it can be made.
"""

from __future__ import annotations

import codecs
import difflib
import errno
import hashlib
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Snapshot", "TargetSnapshot", "WriteBackError", "WriteConflict", "WriteResult", "check_writable",
           "distinct_targets",
           "render_like", "snapshot", "snapshot_target", "text_hash", "texts_as_written", "write_back"]

MAX_BYTES = 8 * 1024 * 1024
"""As trainlint.files.sources.MAX_FILE_BYTES: a file trainlint does not read is not one it rewrites."""

_TEMP_PREFIX = ".trainlint-"
_TEMP_SUFFIX = ".tmp"


class WriteBackError(Exception):
    """A write that did not happen; the target is unchanged. ``str(exc)`` is the user's message."""


class WriteConflict(WriteBackError):
    """The file changed since the text was read: nothing was written."""


@dataclass(frozen=True)
class Snapshot:
    path: str
    data: bytes
    text: str
    """As ``read_source`` gives it: BOM dropped, every line end ``\\n``."""
    hash: str


@dataclass(frozen=True)
class TargetSnapshot:
    """What a file ``write_back(..., to=...)`` will replace held when the write was decided."""
    path: str
    """As given (what ``to=`` must name)."""
    real: str
    """The file it resolved to (a symlink followed)."""
    digest: str | None
    """sha256 of its bytes; None when no file was there."""


@dataclass(frozen=True)
class WriteResult:
    source: str
    """The file the text came from (whose hash was checked)."""
    target: str
    """The file written: ``source`` itself, ``to``, or the file a symlink points to."""
    written: bool
    """False when the new bytes equal what the target already holds (nothing written)."""
    size: int


def text_hash(text: str) -> str:
    """The content hash :func:`write_back` compares: sha256 of the normalised text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ==================================================================== reading and encoding


@dataclass(frozen=True)
class _Conventions:
    encoding: str
    bom: bytes
    raw: str
    """The text as decoded, BOM removed, line ends as they are."""


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _read_bytes(path: str) -> bytes:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise WriteBackError(f"{path}: not a regular file; not rewritten")
        if info.st_size > MAX_BYTES:
            raise WriteBackError(f"{path}: over the {MAX_BYTES // (1024 * 1024)} MB limit; not rewritten")
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except WriteBackError:
        raise
    except OSError as exc:
        raise WriteBackError(f"cannot read {path}: {_describe(exc)}") from None
    if len(data) > MAX_BYTES:
        raise WriteBackError(f"{path}: over the {MAX_BYTES // (1024 * 1024)} MB limit; not rewritten")
    return data


def _conventions(data: bytes, path: str) -> _Conventions:
    for bom, encoding in ((codecs.BOM_UTF32_LE, "utf-32-le"),  # noqa: B007 - the loop picks bom and encoding (codecs.BOM_UTF32_BE, "utf-32-be"),
                          (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                          (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            break
    else:
        bom, encoding = b"", "utf-8"
    try:
        raw = data[len(bom):].decode(encoding)
    except UnicodeDecodeError as exc:
        raise WriteBackError(f"{path}: not valid {encoding.upper()} text (byte offset {exc.start}); not rewritten") from None
    return _Conventions(encoding, bom, raw)


def _normalise(raw: str) -> str:
    return raw.replace("\r\n", "\n").replace("\r", "\n")


def snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read ``path`` once: its bytes, its text as the readers normalise it, and that text's hash."""
    name = os.fspath(path)
    data = _read_bytes(name)
    text = _normalise(_conventions(data, name).raw)
    return Snapshot(name, data, text, text_hash(text))


def snapshot_target(path: str | os.PathLike[str]) -> TargetSnapshot:
    """Record what ``path`` holds now (or that it is absent), for ``write_back(..., to=path, target=...)``.

    Take it when the write is decided (before the work that computes the new text), so that a
    file changed in the meantime is refused rather than overwritten."""
    name = os.fspath(path)
    real = os.path.realpath(name)
    return TargetSnapshot(name, real, _target_digest(real))


def _target_digest(real: str) -> str | None:
    if not os.path.lexists(real):
        return None
    if os.path.isdir(real):
        raise WriteBackError(f"{real} is a directory; not written")
    try:
        return hashlib.sha256(_read_bytes(real)).hexdigest()
    except WriteBackError:
        if not os.path.lexists(real):  # removed while being read
            return None
        raise


def _check_target(before: TargetSnapshot) -> None:
    """Refuse when the target is no longer what :func:`snapshot_target` saw."""
    real = os.path.realpath(before.path)
    if real != before.real:
        raise WriteConflict(f"{before.path} now points to {real}, not {before.real} as when trainlint looked at it; "
                            "nothing written (run again)")
    now = _target_digest(real)
    if now != before.digest:
        what = ("was created" if before.digest is None else "was removed" if now is None else "changed")
        raise WriteConflict(f"{before.path} {what} since trainlint looked at it; nothing written (run again)")


_LINE_END = re.compile(r"(\r\n|\r|\n)")


def _split(raw: str) -> tuple[list[str], list[str]]:
    """Lines and their ends, as many as ``normalised.split("\\n")`` gives (the last end is '')."""
    parts = _LINE_END.split(raw)
    return parts[0::2], parts[1::2] + [""]


def _line_ends(raw: str, new_text: str) -> str:
    """``new_text`` (``\\n`` line ends) with the line ends ``raw`` has."""
    old_contents, old_ends = _split(raw)
    styles = {e for e in old_ends if e}
    if len(styles) <= 1:
        style = styles.pop() if styles else "\n"
        return new_text if style == "\n" else new_text.replace("\n", style)
    # Mixed: keep each unchanged line's own end; a new or changed line takes the end of the
    # line before it (the first line: the most common end).
    new_contents = new_text.split("\n")
    common = max(sorted(styles), key=old_ends.count)
    out: list[str] = []
    previous = common
    matcher = difflib.SequenceMatcher(None, old_contents, new_contents, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(j2 - j1):
            line = new_contents[j1 + k]
            if tag == "equal" or (tag == "replace" and i1 + k < i2):
                end = old_ends[i1 + k] or previous
            else:
                end = previous
            previous = end
            out.append(line)
            out.append(end)
    # the split gives one more piece than there are line ends: the text after the last "\n"
    # has no end of its own
    out.pop()
    return "".join(out)


def _encode(data: bytes, path: str, new_text: str) -> bytes:
    conv = _conventions(data, path)
    text = _line_ends(conv.raw, new_text)
    try:
        return conv.bom + text.encode(conv.encoding)
    except UnicodeEncodeError as exc:
        raise WriteBackError(f"{path}: the new text has a character {conv.encoding.upper()} cannot encode "
                             f"(offset {exc.start}); not rewritten") from None


def _checked(path: str, expected_hash: str) -> bytes:
    data = _read_bytes(path)
    if expected_hash is not None and text_hash(_normalise(_conventions(data, path).raw)) != expected_hash:
        raise WriteConflict(f"{path} changed since trainlint read it; nothing written (run again)")
    return data


def texts_as_written(path: str, data: bytes, new_text: str) -> tuple[str, str]:
    """The file's text before and after a change, as its bytes hold it: its own line ends (``\\r\\n``
    kept), a UTF-8 BOM as U+FEFF at the start; what a diff that ``git apply`` / ``patch`` accept
    compares. ``data``: the file's bytes (:attr:`Snapshot.data`); ``new_text``: the new normalised text."""
    conv = _conventions(data, path)
    bom = "\ufeff" if conv.bom == codecs.BOM_UTF8 else ""
    return bom + conv.raw, bom + _line_ends(conv.raw, new_text)


def render_like(path: str | os.PathLike[str], new_text: str, expected_hash: str) -> bytes:
    """The bytes :func:`write_back` would write for ``new_text`` (for ``--write-to -``)."""
    name = os.fspath(path)
    return _encode(_checked(name, expected_hash), name, new_text)


# ====================================================================================== write


def write_back(path: str | os.PathLike[str], new_text: str, expected_hash: str, *,
               to: str | os.PathLike[str] | None = None, target: TargetSnapshot | None = None) -> WriteResult:
    """Replace ``path`` (or write ``to``) with ``new_text`` in ``path``'s encoding and line ends.

    ``expected_hash``: :func:`text_hash` of the text ``new_text`` was made from; when ``path``
    no longer has it, :class:`WriteConflict` and nothing is written. ``to``: write there instead,
    with ``target`` its :func:`snapshot_target` (required: the file ``to`` names is checked as
    the source is). Raises :class:`WriteBackError` on any failure, with the target unchanged."""
    source = os.fspath(path)
    if to is not None and (target is None or os.path.abspath(to) != os.path.abspath(target.path)):
        # a programming error, not a user's: every write over another file is checked
        raise TypeError("write_back(to=...) needs target=snapshot_target(to) of that same path")
    data = _checked(source, expected_hash)
    new = _encode(data, source, new_text)
    if target is not None:
        _check_target(target)
    named = os.fspath(to) if to is not None else source
    _refuse_outside_checkout(named)
    target_path = os.path.realpath(named)
    written = _replace(source, expected_hash, target_path, new, target, named)
    return WriteResult(source, target_path, written, len(new))


def check_writable(path: str | os.PathLike[str], *, mode: bool = True) -> None:
    """Raise the :class:`WriteBackError` :func:`write_back` would for ``path`` before writing
    anything: a symlink out of the checkout, and (``mode``) a read-only file. ``--diff`` asks
    without ``mode``: the change a read-only file would get is still shown (a CI job may check a
    read-only checkout), a file outside the checkout is not the checkout's to change."""
    named = os.fspath(path)
    _refuse_outside_checkout(named)
    if not mode:
        return
    try:
        _refuse_read_only(os.path.realpath(named), named)
    except OSError as exc:
        raise WriteBackError(f"cannot write {named}: {_describe(exc)}") from None


def _refuse_outside_checkout(named: str) -> None:
    """A symlink is followed only to a file in the checkout the link is in (:mod:`trainlint.files.checkout`)."""
    from trainlint.files.checkout import outside_checkout

    outside = outside_checkout(named)
    if outside is not None:
        raise WriteBackError(f"cannot write {named}: it leads to {outside.real}, outside the checkout "
                             f"{outside.checkout}; a symlink out of the checkout is not followed, nothing written")


def _refuse_read_only(target: str, named: str) -> None:
    """A file without write permission is one its owner protected: replacing it through its
    directory (which a rename does) would go around that, so it is refused. Root may write any
    file, so a file with no write bit at all is refused for root too."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return  # a new file
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise WriteBackError(f"cannot write {named}: the file is read-only (mode {mode:04o}); not rewritten "
                             "(make it writable to have trainlint change it)")


def _replace(source: str, expected_hash: str, target: str, new: bytes, before: TargetSnapshot | None,
             named: str | None = None) -> bool:
    """Put ``new`` in ``target`` atomically; False when it already holds exactly that."""
    mode, owner = _mode_for(target, source)
    try:
        if os.path.isdir(target):
            raise WriteBackError(f"{target} is a directory; not written")
        if _same_bytes(target, new):
            _checked(source, expected_hash)
            return False
        _refuse_read_only(target, named or target)
    except OSError as exc:
        raise WriteBackError(f"cannot write {target}: {_describe(exc)}") from None
    directory = os.path.dirname(target) or "."
    temp = _write_temp(directory, os.path.basename(target), new, mode, owner)
    try:
        # the last moment the source and the target can be compared: a change from here on is
        # the editor's
        _checked(source, expected_hash)
        if before is not None:
            _check_target(before)
        os.replace(temp, target)
    except BaseException as exc:
        _remove(temp)
        if isinstance(exc, OSError):
            raise WriteBackError(f"cannot replace {target}: {_describe(exc)}") from None
        raise
    _sync_directory(directory)
    return True


def _mode_for(target: str, source: str) -> tuple[int, tuple[int, int] | None]:
    """The target's own permission bits and owner, else the source's bits (a script stays
    executable) and the writer as owner."""
    try:
        info = os.stat(target)
        return stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    except OSError:
        pass
    try:
        return stat.S_IMODE(os.stat(source).st_mode), None
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask, None


def _same_bytes(target: str, new: bytes) -> bool:
    try:
        if os.path.getsize(target) != len(new):
            return False
        with open(target, "rb") as handle:
            return handle.read(len(new) + 1) == new
    except FileNotFoundError:
        return False


def _write_temp(directory: str, name: str, data: bytes, mode: int, owner: tuple[int, int] | None) -> str:
    try:
        fd, temp = tempfile.mkstemp(prefix=f"{_TEMP_PREFIX}{name}.", suffix=_TEMP_SUFFIX, dir=directory)
    except OSError as exc:
        # a replace needs a new file beside the target: a read-only directory or file system stops it
        raise WriteBackError(f"cannot write {os.path.join(directory, name)}: cannot write in its directory "
                             f"{directory}: {_describe(exc)}; the file is unchanged") from None
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:  # pragma: no cover - os.write raises instead
                    raise OSError(errno.EIO, "short write")
                view = view[written:]
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                try:  # keeps another user's file theirs when we may (root); else it becomes ours
                    os.fchown(fd, *owner)
                except OSError:
                    pass
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        _remove(temp)
        if isinstance(exc, OSError):
            raise WriteBackError(f"cannot write {os.path.join(directory, name)}: {_describe(exc)}; "
                                 "the file is unchanged") from None
        raise
    return temp


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _sync_directory(directory: str) -> None:
    """Make the rename durable (best effort: some file systems cannot open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ============================================================================ target naming


def distinct_targets(sources: list[str], directory: str | os.PathLike[str]) -> dict[str, Path]:
    """Where each of ``sources`` goes in ``directory``: its own name, unless two share a name;
    then each keeps its path below the sources' common directory (a/model.yml, b/model.yml)."""
    base = Path(directory)
    names = [Path(s).name for s in sources]
    if len(set(names)) == len(names):
        return {s: base / n for s, n in zip(sources, names, strict=True)}
    absolute = [os.path.abspath(s) for s in sources]
    common = os.path.commonpath([os.path.dirname(a) for a in absolute])
    out = {s: base / os.path.relpath(a, common) for s, a in zip(sources, absolute, strict=True)}
    if len(set(out.values())) != len(out):  # pragma: no cover - distinct absolute paths stay distinct
        raise WriteBackError("two files would be written to the same place")
    return out
