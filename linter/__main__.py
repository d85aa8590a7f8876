"""``python -m trainlint``.

``python -m`` puts the current directory first on ``sys.path``: a checkout being linted (or the
workspace an editor starts ``python -m trainlint lsp`` in) that holds a ``yaml.py`` or an
``x.dist-info/entry_points.txt`` would have its code imported as trainlint's dependency or
plugin. The entry is dropped before anything else is imported, as pip's ``__main__`` does, so
``python -m trainlint`` imports what the ``trainlint`` console script imports. (``trainlint``
itself is already imported by then; the package is found wherever it is installed.)
"""

import os
import sys


def _drop_current_directory() -> None:
    if not sys.path or getattr(sys.flags, "safe_path", False):  # python -P: the directory was never added
        return
    first = sys.path[0]
    try:
        here = os.getcwd()
    except OSError:  # the current directory was removed: nothing can be imported from it anyway
        here = None
    if first in ("", ".") or (here is not None and os.path.realpath(first) == os.path.realpath(here)):
        del sys.path[0]


_drop_current_directory()

from trainlint.cli import main  # noqa: E402 - after sys.path is cleaned

sys.exit(main())
