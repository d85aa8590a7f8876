"""The adapter interface: one per config format.

An adapter answers two questions: is this file mine (:meth:`Adapter.sniff`), and what does it
say (:meth:`Adapter.load`); and, optionally, the way back: how a change is spelled in this
format (:meth:`Adapter.spell_changes`) and how it is written into the file
(:meth:`Adapter.writer`). Loading never executes anything from the file: no shell, no eval,
safe YAML only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from trainlint.core.diagnostics import Diagnostic
from trainlint.core.document import Document
from trainlint.files.sources import SourceText, read_source
from trainlint.core.spec import TrainingSpec

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.core.results import FileResult
    from trainlint.frameworks.locate import FrameworkSettings
    from trainlint.files.writing import Texts, Writer

# sniff() scores
NOT_MINE = 0
BY_NAME = 20
"""The name looks like this format's (ds_config*.json) but the content says nothing either way."""
BY_CONTENT = 60
"""The content has keys or flags that only this format uses."""
CERTAIN = 100


@dataclass
class LoadContext:
    """What an adapter may use besides the file itself."""

    extra_paths: list[str] = field(default_factory=list)
    """Further files of the same run, merged after the main one (NeoX takes several YAMLs)."""
    read: Callable[[str], SourceText] = read_source
    """How to read a referenced file (a --deepspeed_config JSON): same limits, same errors."""
    environment: dict[str, str] = field(default_factory=dict)
    """Variables the user declared for static resolution of launch scripts (never os.environ)."""
    frameworks: FrameworkSettings | None = None
    """The session's project ``framework`` table (:func:`trainlint.frameworks.locate.configure`): which
    release or checkout each framework's configs are checked against. None: no project config says."""
    named: bool = False
    """The user named the file (and ``extra_paths``) as the run to check: on the command line, as a
    declared run, in a launch command. False for a file met walking a directory or an editor buffer,
    which may be one part of a split config. Recorded in ``TrainingSpec.named``."""


@dataclass
class LoadResult:
    """What an adapter read from one file: documents, specs and input diagnostics."""

    format: str
    documents: list[Document] = field(default_factory=list)
    specs: list[TrainingSpec] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


class Adapter(ABC):
    """A config format, both ways. Subclasses set ``name`` and implement ``sniff`` and ``load``
    (reading); ``spell_changes`` and ``writer`` (a change as the user writes it, and written back
    into the file) are optional: an adapter without them still gets checks and estimates, and its
    suggestions are spelled by field name and not written back.

    A plugin adapter implements the same protocol and gets the same services: ``check``,
    ``estimate``, ``suggest`` and ``suggest --write-to`` call it through these methods only."""

    name: ClassVar[str]
    """The format name used in output: ``deepspeed``, ``megatron``, ``neox``."""
    extensions: ClassVar[tuple[str, ...]] = ()
    """File suffixes worth sniffing when walking a directory (``.json``)."""

    @abstractmethod
    def sniff(self, path: str, text: str) -> int:
        """How sure this adapter is that the file is its format: 0 (not mine) to 100.

        Content decides first (``BY_CONTENT`` or more), the file name only breaks ties
        (``BY_NAME``). Must be cheap and must never raise on garbage."""

    @abstractmethod
    def load(self, source: SourceText, context: LoadContext) -> LoadResult:
        """Parse, check against the schema, and build one TrainingSpec per run in the file.

        Problems with the input are returned as TL0xx diagnostics at their position; the
        method raises only on a bug in trainlint (the engine reports that as TL999)."""

    def spell_changes(self, spec: TrainingSpec, changes: dict[str, Any], base: Any) -> list[str] | None:
        """Each layout change (keys of :data:`trainlint.layout.changes.CHANGE_KEYS`) as the user
        writes it in this format: flags, JSON keys, YAML keys. ``base``: the estimator's resolved
        inputs of the run (layers, pipeline stages) for changes spelled in derived units.
        None: the format has no spelling of its own (the changes are named by field)."""
        return None

    def setting_name(self, dest: str) -> str | None:
        """How this format's files write the setting a framework calls ``dest`` (Megatron-LM's
        argparse dest): a Megatron-Bridge file writes ``model.linear_attention_freq`` where a script
        writes ``--linear-attention-freq``. Findings about a setting the file does not write name it
        so. None: as the framework's own argument (the flag)."""
        return None

    def expressible(self, spec: TrainingSpec) -> frozenset[str] | None:
        """The layout dimensions this format can write for ``spec``'s run, out of ``tp``, ``pp``,
        ``vpp``, ``cp``, ``micro``, ``recompute``, ``zero``, ``dist-opt``: what ``trainlint suggest``
        searches. None: the micro batch only."""
        return None

    def writer(self, texts: Texts, result: FileResult, spec: TrainingSpec, changes: dict[str, Any],
               index: int) -> Writer | None:
        """The writer that applies ``changes`` to run ``index`` of ``result`` (``spec``) as text edits
        on ``texts`` (:class:`trainlint.files.writing.Writer`; written to disk through
        :mod:`trainlint.files.safe_write` after the round trip is verified). None: this format is not
        written back."""
        return None


def looks_like_shell(text: str) -> bool:
    """A shebang first line or ``#SBATCH`` lines: a shell script, never a YAML or JSON config, even
    when a here-doc in it holds YAML-like text (a .slurm job writing a DeepSpeed JSON, issue 28)."""
    if text.startswith("#!"):
        return True
    head = text[:65536]
    return head.startswith("#SBATCH") or "\n#SBATCH" in head
