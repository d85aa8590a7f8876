"""Which ``#`` of a config starts a real comment, for the suppression comments.

``# trainlint: disable-file`` written inside a here-document, a YAML block scalar or a quoted string
is data the framework reads, not a comment: it must not silence the file (issue 29, G4). This
module answers "is the ``#`` at (line, column) a comment?" from the file's own syntax: the comment
nodes of tree-sitter-bash for a shell script, the scalars of PyYAML's event stream for a YAML file.
It is asked only for lines that hold a directive (see :func:`trainlint.project.suppressions.parse_suppressions`).
"""

from __future__ import annotations

from typing import Callable

CommentTest = Callable[[int, int], bool]
"""(1-based line, 0-based character column of the ``#``) -> whether a comment starts there."""

_YAML = (".yaml", ".yml")
_JSON = (".json", ".jsonc", ".hjson")


def comment_test(path: str, text: str) -> CommentTest | None:
    """The test for ``path``'s syntax; None when every ``#`` may be taken as a comment (a format
    without data that could hold one)."""
    lower = path.lower()
    if lower.endswith(_JSON):
        return None  # no suppression comments are read in JSON (per-file-ignores there)
    if lower.endswith(_YAML):
        return _yaml_test(text)
    return _shell_test(text)


def _shell_test(text: str) -> CommentTest:
    """The comments tree-sitter-bash finds (a here-document body or a string is not one)."""
    from trainlint.adapters.megatron.shell_text import _parser

    data = text.replace("\x00", " ").encode("utf-8", errors="surrogatepass")
    starts: set[tuple[int, int]] = set()
    stack = [_parser().parse(data).root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            if b"trainlint:" in node.text:
                row, byte_column = node.start_point
                line_start = node.start_byte - byte_column
                column = len(data[line_start:node.start_byte].decode("utf-8", errors="replace"))
                starts.add((row + 1, column))
            continue
        stack.extend(node.children)
    return lambda line, column: (line, column) in starts


def _yaml_test(text: str) -> CommentTest:
    """Not inside a scalar of the YAML event stream (a block scalar, a quoted string: its value).
    In a file with a syntax error nothing from the error on is taken as a comment: what is data
    there is not known, and a directive must not hide the file's TL002."""
    import yaml

    try:
        loader: type = yaml.CSafeLoader
    except AttributeError:  # pragma: no cover - PyYAML without libyaml
        loader = yaml.SafeLoader
    regions: list[tuple[tuple[int, int], tuple[int, int]]] = []
    broken = (1 << 62, 0)
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.ScalarEvent) and "trainlint:" in event.value:
                start, end = event.start_mark, event.end_mark
                if start is not None and end is not None:
                    regions.append(((start.line + 1, start.column), (end.line + 1, end.column)))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        broken = (mark.line + 1, 0) if mark is not None else (1, 0)

    def is_comment(line: int, column: int) -> bool:
        return (line, column) < broken and not any(a <= (line, column) < b for a, b in regions)

    return is_comment
