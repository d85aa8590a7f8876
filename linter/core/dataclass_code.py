"""The methods ``@dataclass`` writes for trainlint's classes, compiled once and kept beside the bytecode.

For every class, the dataclass decorator writes the source of ``__init__``, ``__repr__``, ``__eq__``
(and, frozen, ``__setattr__``/``__delattr__``; ordered, the comparisons) and compiles it with
``exec``: about 360 compilations in a cold ``trainlint check`` of one JSON file, close to half of its
instructions (issue 33). Python's bytecode cache cannot hold them (they are not in a module's source),
so this module does what it would do: :func:`install` gives the ``dataclasses`` module an ``exec`` that,
for a class of a ``trainlint`` module, looks the generated source up in a table of compiled code
(keyed by the exact source text), compiles it on a miss, and writes the new entries on exit.

Nothing else changes: the classes are the same dataclasses (``fields()``, ``replace()``, the type
hints, the plugin API), and the code run is what ``compile`` gives for the same text, as the decorator's
own ``exec`` would give it (no inherited ``__future__`` flags: ``dataclasses`` has none). The table is
in the place ``importlib`` puts this package's bytecode (``importlib.util.cache_from_source``, so
``PYTHONPYCACHEPREFIX`` is honoured), named with the interpreter's cache tag and starting with its
bytecode magic number, and is not written when bytecode is not (``PYTHONDONTWRITEBYTECODE``,
``sys.dont_write_bytecode``). A missing, unreadable, stale or foreign table is a table without the
entry: the source is compiled as before. The table grows only with texts that were compiled, is
rewritten only after a miss (merged with what another process wrote meanwhile, replaced atomically)
and starts again from what a process used once it holds more than ``MAX_ENTRIES``.

This module deliberately has no ``from __future__ import annotations``: a class of another package
reaches :func:`_exec` too, and is compiled here with ``dont_inherit=True`` exactly as before.
"""

import builtins
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, cache_from_source
from types import CodeType
from typing import Any

FORMAT = b"trainlint-dataclass-code-1\n"
"""After the bytecode magic number: which layout of the table the file holds."""
MAX_ENTRIES = 4096
"""A table larger than this (classes edited many times in a checkout) restarts from one process's entries."""
PACKAGE = "trainlint"

_table: "dict[str, bytes] | None" = None
"""Generated source text -> ``marshal.dumps`` of its compiled code; loaded on the first class."""
_used: "dict[str, bytes]" = {}
"""The entries this process looked up or compiled (what a table restarts from)."""
_missed = False


def table_path() -> "str | None":
    """Where the table is (None when this interpreter keeps no bytecode cache)."""
    try:
        pseudo_source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dataclass_methods.py")
        pyc = cache_from_source(pseudo_source, optimization="")
    except (NotImplementedError, ValueError):  # no sys.implementation.cache_tag
        return None
    return pyc[: -len(".pyc")] + ".marshal"


def _read(path: "str | None") -> "dict[str, bytes]":
    if path is None:
        return {}
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError:
        return {}
    header = MAGIC_NUMBER + FORMAT
    if not data.startswith(header):
        return {}
    try:
        table = marshal.loads(memoryview(data)[len(header):])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {key: value for key, value in table.items() if isinstance(key, str) and isinstance(value, bytes)}


def compiled(source: str) -> CodeType:
    """The code of one generated source text: from the table, else compiled (and kept for the next run)."""
    global _table, _missed
    if _table is None:
        _table = _read(table_path())
    blob = _table.get(source)
    if blob is not None:
        try:
            code = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            code = None
        if isinstance(code, CodeType):
            _used[source] = blob
            return code
    code = compile(source, "<string>", "exec", dont_inherit=True)
    blob = marshal.dumps(code)
    _table[source] = _used[source] = blob
    if not _missed:
        _missed = True
        import atexit

        atexit.register(save)
    return code


def save() -> None:
    """Write the table with this process's entries (at exit, after a miss); never raises."""
    if sys.dont_write_bytecode or not _used:
        return
    path = table_path()
    if path is None:
        return
    table = _read(path)
    table.update(_used)
    if len(table) > MAX_ENTRIES:
        table = dict(_used)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as stream:
            stream.write(MAGIC_NUMBER + FORMAT + marshal.dumps(table))
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **options: Any) -> None:
    # Reached only from dataclasses (its own name lookup of `exec`); the builtin for anything but a
    # source text the decorator wrote for a class of a trainlint module.
    if (type(source) is str and isinstance(globals, dict)
            and str(globals.get("__name__", "")).partition(".")[0] == PACKAGE):
        source = compiled(source)
    elif type(source) is str:
        source = compile(source, "<string>", "exec", dont_inherit=True)
    builtins.exec(source, globals, locals, **options)


def install() -> None:
    """Give ``dataclasses`` the caching ``exec``: a global of that module, which its name lookup finds
    before the builtin (idempotent)."""
    import dataclasses  # here: trainlint.core.deferred_stdlib defers inspect, which dataclasses imports, first

    vars(dataclasses)["exec"] = _exec
