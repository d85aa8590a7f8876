"""The Framework object: everything trainlint knows about one training framework, in one place.

A *format* is a way a run is written down (a DeepSpeed JSON, a Megatron-LM launch script, a
GPT-NeoX YAML, an HF Trainer YAML with a ``deepspeed:`` key); a *framework* is what runs it and
decides what the settings mean (``TrainingSpec.framework``: ``deepspeed``, ``megatron``,
``neox``). One framework may be read from several formats (DeepSpeed: its JSON, the HF Trainer's
YAML and launch lines, accelerate's config), so a ``Framework`` holds a list of adapters.

The core (spec, estimator, rules, layout search, engine, faces) never asks "is this Megatron?":
it asks the run's ``Framework`` (:func:`trainlint.adapters.framework_of`) a question, or checks a
capability. Built-in frameworks are registered through the ``trainlint_frameworks`` hook
(:mod:`trainlint.core.hookspecs`), exactly as a plugin registers its own.

Contract for a new framework (a fifth one, or a plugin's)
---------------------------------------------------------
Subclass :class:`Framework` in ``adapters/<name>/framework.py`` and return an instance from a
``trainlint_frameworks`` hook implementation. Set:

* ``name``: the value your adapters write into ``TrainingSpec(framework=...)``; ``title`` for humans.
* ``adapters()``: your formats (:class:`trainlint.adapters.base.Adapter`: ``sniff``, ``load`` with
  provenance; optionally ``spell_changes``, ``expressible``, ``writer`` for fix hints, ``suggest``
  and ``check --fix``). The registry adds them to the session's adapters.
* ``capabilities(spec)``: what your runs support (the ``CAP_*`` names below). A rule declares
  the capabilities it needs (``Rule.requires``); it runs on every run whose framework has them, so
  declare each one your engine really has, and a new framework gets every rule its spec supports.
* ``set_engine(spec)``: fill ``spec.engine`` (who owns the optimizer, what is sharded, whose
  batch settings win) from the spec's fields, the same way your adapter does when reading; called
  again after a spec is changed in memory (a candidate layout, a fix hint).
* the layout search (``search_policy``, ``layout_changes``, ``batch_changes``,
  ``recompute_changes``, ``mirror_settings``): which layouts your framework accepts and how a
  layout change becomes change keys and the settings a re-read file would have. The defaults
  treat a run as a plain data-parallel job whose batch triple and recompute are named by field.
* ``catalog_family``: the name of your argument catalogs (``linter/data/frameworks/names-<family>.json``)
  and of your table in the project config's ``framework = {...}``; empty: no catalog.
* ``key_catalog(target=None)``: the one answer to "which keys exist" (:class:`KeyCatalog`); with the
  run's target (``spec.target``), what the checked release defines too (``KeyCatalog.release``).
  Callers always pass the target, so an override takes the ``target`` parameter.
* ``launch_kinds`` / ``read_launch(...)``: the ``trainlint run -- CMD`` forms you read.
* ``rules()``: your own start-up rules (what your framework refuses at launch): rule classes, or
  the module names of rule bundles; the host registers them as the built-in ones are.

Everything has a neutral default, so a framework that sets only ``name``, ``adapters()`` and
``capabilities`` already gets checks, estimates and the cross-framework rules it qualifies for.

This module is part of the core model layer: it imports nothing above it (no adapters, estimator,
rules or search); the types it mentions are duck-typed (``Any``) where they live higher up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from trainlint.core.provenance import Origin, Value
from trainlint.core.spec import TrainingSpec
from trainlint.core.values import as_bool, as_int

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.adapters.base import Adapter

# -- capabilities: what a run's framework supports; a rule names those it needs (Rule.requires) ---------------

CAP_MEGATRON_MODEL = "megatron-model"
"""The model is built by Megatron's tensor-parallel layers (Megatron-LM, GPT-NeoX): attention heads
and hidden sizes must divide by TP, sequence parallelism is a switch, positions are learned or rotary
with a ``max_position_embeddings`` bound, the training loop is Megatron's (iterations, checkpoints)."""
CAP_MEGATRON_CORE = "megatron-core"
"""Megatron-Core's parallel state and argument validation: layers divisible by pipeline (and virtual
pipeline) stages, context parallelism (sequence divisible by 2 x CP), expert parallelism (experts
divisible by EP)."""
CAP_MEGATRON_ARGUMENTS = "megatron-arguments"
"""The run's settings are Megatron-LM's argparse destinations, checked by its ``validate_args``."""
CAP_DEEPSPEED_ENGINE = "deepspeed-engine"
"""DeepSpeed's engine runs the step with the config's ZeRO and batch keys (``zero_optimization``,
``train_batch_size``...) at the top level of the settings (DeepSpeed JSON, GPT-NeoX)."""
CAP_DEEPSPEED_CONFIG = "deepspeed-config"
"""The run's settings are a DeepSpeed config exactly as ``deepspeed.initialize`` reads it (its own
start-up checks: optimizer, elasticity, AMP, offload)."""
CAP_NEOX_ARGUMENTS = "neox-arguments"
"""The run's settings are GPT-NeoX's ``NeoXArgs`` (its YAML keys)."""
CAP_STARTUP_CHECKS = "startup-checks"
"""The adapter reads the framework's start-up settings (fp16/bf16 switches, the pipeline engine,
the batch triple) into the spec the way the framework does at start-up, so a conflict among them
is the framework's own refusal, quoted as such (trainlint's built-in readers; a plugin format
states it only when its reader does the same)."""

CAPABILITIES = {
    CAP_MEGATRON_MODEL: "Megatron's tensor-parallel model code builds the layers",
    CAP_MEGATRON_CORE: "Megatron-Core's parallel state and argument validation (PP, VPP, CP, EP)",
    CAP_MEGATRON_ARGUMENTS: "settings are Megatron-LM argparse destinations",
    CAP_DEEPSPEED_ENGINE: "DeepSpeed's engine runs the step with the config's ZeRO and batch keys",
    CAP_DEEPSPEED_CONFIG: "settings are a DeepSpeed config as deepspeed.initialize reads it",
    CAP_NEOX_ARGUMENTS: "settings are GPT-NeoX NeoXArgs",
    CAP_STARTUP_CHECKS: "precision, pipeline engine and batch triple read as the framework does at start-up",
}
"""Every capability name with a one-line meaning (``trainlint rules`` and the docs show them)."""


class KeyCatalog:
    """Which keys one framework defines, asked through one object (``Framework.key_catalog()``):
    the schema validator's key list, the unknown-key findings and their did-you-mean, the language
    server's hovers, and which releases define a name. This neutral one defines nothing (a plugin
    framework without a catalog); trainlint's frameworks return
    :class:`trainlint.frameworks.keys.ShippedKeyCatalog`, which answers from the shipped data (the
    framework's JSON Schema, its argument catalogs, its removed keys)."""

    def schema(self) -> dict | None:
        """The JSON Schema of the framework's settings (what the schema validator checks), or None."""
        return None

    def properties(self, section: str = "") -> dict[str, dict]:
        """The keys of a section (dotted; "" the top level) with their schema properties."""
        return {}

    def entry(self, key: str) -> dict | None:
        """The schema property of a key (dotted, or a JSON pointer), for a hover; None if undefined."""
        return None

    def suggest(self, name: str, section: str = "") -> list[str]:
        """Keys of the section close to a misspelled ``name`` (best first)."""
        return []

    def defined_by(self, name: str) -> str:
        """Which shipped releases define ``name`` ("Megatron-LM core_v0.4.0 to core_v0.9.0 defines it"), or ""."""
        return ""

    def releases_of(self, name: str) -> list[str]:
        """The shipped releases (labels, oldest first) that define ``name``."""
        return []

    def release_masks(self) -> tuple[tuple[str, ...], dict[str, int]]:
        """(release labels, name -> bit mask of the shipped releases defining it)."""
        return (), {}

    def removed(self, pointer: str) -> Any:
        """A key old releases read and later ones refuse
        (:class:`trainlint.frameworks.removed_keys.RemovedKey`), or None."""
        return None

    # -- the release the run is checked against (a located checkout, a stated or pinned release) --

    def release(self) -> Any:
        """The argument catalog of the release this catalog was asked for
        (:class:`trainlint.frameworks.catalog.ArgCatalog`: what a located checkout, a stated release or a
        pinned submodule defines), or None: the run is checked against trainlint's own table (the
        schema above). Ask ``framework.key_catalog(spec.target)``; a consumer never reads the target's
        catalog beside this object."""
        return None

    def defines(self, name: str) -> bool | None:
        """Whether the checked release defines ``name`` (an argument, a key), or None when there is no
        release catalog (trainlint's own table decides)."""
        release = self.release()
        return None if release is None else name in release

    def defines_dest(self, dest: str) -> bool | None:
        """Whether the checked release has an argument whose destination is ``dest`` (an argparse
        ``dest``: Megatron's catalogs are keyed by option string), or None without a release catalog."""
        release = self.release()
        return None if release is None else any(arg.dest == dest for arg in release.args.values())


EMPTY_KEYS = KeyCatalog()


@dataclass(frozen=True)
class PipelineEngine:
    """Why DeepSpeed's PipelineEngine is engaged for a run."""

    reason: str
    at: Value | None
    """The value that engages it (``pipe_parallel_size``, ``pipeline.stages``, ``--deepspeed``)."""
    stages: int | None
    only_wrapper: bool
    """True when the engine is engaged without real pipeline parallelism (one stage): the fix is
    then to leave the engine out rather than to change the ZeRO stage."""


ModelParallel = tuple[int, str, tuple[tuple[Value | None, str], ...]]
"""(the product the world size is divided by to get DP, its arithmetic for messages, the values
divided out each with a note)."""


@dataclass
class SearchPolicy:
    """How ``trainlint suggest`` (and the fix hints' layout search) may vary one run: the candidates
    and constraints that depend on the framework, as data the search reads (never a framework name)."""

    recompute: Sequence[str] = ("none", "selective", "full")
    """Recompute granularities the framework offers (in the estimator's order)."""
    zero: Sequence[int] = ()
    """ZeRO stages the framework offers (empty: ZeRO is not a setting of this run, unless the
    adapter says it can express it)."""
    sp_policy: str = "fixed"
    """"tp": sequence parallelism on with TP > 1; "keep": as written (dropped at TP 1); "fixed"."""
    kv_divides_or_multiple: bool = False
    """KV heads may divide TP as well as be a multiple of it (Megatron's query groups)."""
    expert_grid: bool = False
    """The expert grid (EP x ETP x PP) must divide the world (Megatron-Core's MoE)."""
    interleave_needs_pp_multiple: bool = False
    """With interleaving, the micro-batches per step must be a multiple of the pipeline size."""
    pp_divides_layers: bool = False
    """Only pipeline sizes that divide the layers (Megatron-LM)."""
    pipeline_engine: str = ""
    """Which DeepSpeed pipeline-engine rule bounds ZeRO: "" none; "stages" (DeepSpeed: refuses ZeRO
    >= 2 with PP > 1); "switch" (GPT-NeoX: engaged at pipe_parallel_size >= 1, a layout choice at PP
    1); "wrapped" (Megatron-DeepSpeed: engaged unless --no-pipeline-parallel)."""
    current_pipeline_engine: bool | None = None
    """The run's pipeline engine as written ("switch" engines only)."""
    ds_pipeline_engine: bool = False
    """"wrapped": DeepSpeed's pipeline engine is engaged."""
    bf16_accum_guard: bool = False
    """bf16 on DeepSpeed's pipeline engine without fp32 gradient accumulation (TL134, TL180)."""
    notes: list[str] = field(default_factory=list)


class Framework:
    """One training framework. See the module docstring for the contract; every method has a
    framework-neutral default, so a subclass overrides only what its framework does differently."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("key_catalog")
        code = getattr(own, "__code__", None)  # a plain function; anything else is left as written
        if code is not None and code.co_argcount < 2:
            # A plugin written before ``key_catalog`` took the run's target (``def key_catalog(self)``)
            # keeps working: it answers for its shipped keys whatever the target.
            def key_catalog(self: Any, target: Any = None, _own: Any = own) -> KeyCatalog:
                return _own(self)

            key_catalog.__doc__ = own.__doc__
            cls.key_catalog = key_catalog  # type: ignore[method-assign]

    name: ClassVar[str] = ""
    """``TrainingSpec.framework`` of this framework's runs (``megatron``)."""
    title: ClassVar[str] = ""
    """How the outputs name it (``Megatron-LM``)."""
    repository: ClassVar[str] = ""
    """Its upstream repository on GitHub (``NVIDIA/Megatron-LM``), for links to its source."""
    catalog_family: ClassVar[str] = ""
    """Its argument catalogs' family and its key in the project config's ``framework`` table."""
    source_markers: ClassVar[tuple[str, ...]] = ()
    """Where a checkout of the framework keeps its argument definitions (relative paths, in the order
    tried; a fork keeps the layout): what marks a checkout beside a config, and what is read for its
    argument catalog (``trainlint.frameworks``)."""
    source_rank: ClassVar[int] = 100
    """The order checkouts are recognised and listed in (lower first)."""
    import_name: ClassVar[str] = ""
    """The top-level package an installed copy is found by (never imported)."""
    pin_names: ClassVar[tuple[str, ...]] = ()
    """Folder names a project's git submodule of the framework is recognised by."""
    setting_example: ClassVar[str] = ""
    """The project config line that states the target (``framework = {megatron = "..."}``)."""
    keeps_refused: ClassVar[bool] = False
    """Its argument catalogs record flags its parser refuses (Megatron's removed flags)."""
    launch_kinds: ClassVar[tuple[str, ...]] = ()
    """The ``trainlint run`` launch forms this framework reads (``LaunchCommand.kind`` values)."""
    shows_zero: ClassVar[bool] = False
    """A layout of this framework's runs always states its ZeRO stage (it is written in the config)."""
    change_settings: ClassVar[dict[str, str]] = {}
    """Layout change key -> the setting (``spec.settings`` key) a re-read file would carry it in."""

    # -- detection, reading, writing ------------------------------------------------------------

    def adapters(self) -> list[Adapter]:
        """The formats this framework is read from (and written back to), in tie-break order."""
        return []

    # -- what its runs support ------------------------------------------------------------------

    def capabilities(self, spec: TrainingSpec) -> frozenset[str]:
        """The capabilities of ``spec``'s run (some depend on the run: a Megatron-DeepSpeed script
        has DeepSpeed's engine)."""
        return frozenset()

    # -- engine semantics -----------------------------------------------------------------------

    def set_engine(self, spec: TrainingSpec) -> None:
        """Fill ``spec.engine`` from the spec's fields as this framework's start-up does."""

    def deepspeed_prefix(self, spec: TrainingSpec) -> str:
        """Where DeepSpeed's config keys are in ``spec.settings``: "" at the top level (a DeepSpeed
        JSON, NeoX), ``deepspeed:`` for a config merged into a Megatron-DeepSpeed script's settings."""
        return ""

    def model_parallel_product(self, spec: TrainingSpec) -> ModelParallel | None:
        """The product this framework divides the world size by to get the data-parallel size (which
        :func:`data_parallel_size` divides by: :func:`data_parallel`). Default: TP x pipeline
        stages, a missing one counted as 1."""
        p = spec.parallel
        tp = as_int(p.tensor) or 1
        pp = as_int(p.pipeline) or 1
        return (tp * pp, f"TP {tp} x pipeline stages {pp}",
                ((p.tensor, f"tensor parallel {tp}"), (p.pipeline, f"pipeline stages {pp}")))

    def pipeline_engine(self, spec: TrainingSpec) -> PipelineEngine | None:
        """Whether the run is wrapped in DeepSpeed's PipelineEngine, and why; None when not, or
        unknown. Default: only when the spec says so (``parallel.pipeline_engine``)."""
        p = spec.parallel
        if as_bool(p.pipeline_engine):
            return PipelineEngine("the run uses DeepSpeed's PipelineEngine", p.pipeline_engine, as_int(p.pipeline), False)
        return None

    def partial_arguments(self, spec: TrainingSpec) -> bool:
        """The run was read from an incomplete argument set (flag variables, an arguments file
        rather than a launch command): whoever uses it may add settings, so the framework defaults
        it falls back to prove nothing."""
        return False

    def arguments_without_launch(self, spec: TrainingSpec) -> bool:
        """The run is an argument list another script launches and may extend (Megatron's
        ``MODEL_ARGS=(...)`` without an entry point): its defaults are no statement about the run."""
        return False

    def unmodelled_entry(self, entry: str) -> str | None:
        """Why the estimator does not model what the entry point ``entry`` trains (a vision
        encoder beside the language model), or None."""
        return None

    def zero_is_layout(self, spec: TrainingSpec) -> bool:
        """ZeRO's stage is a setting of this run (a DeepSpeed config is read)."""
        return False

    def sequence_parallel_switch(self, spec: TrainingSpec) -> bool:
        """Sequence parallelism is a switch this run writes."""
        return False

    def distributed_optimizer_switch(self, spec: TrainingSpec) -> bool:
        """Megatron's distributed optimizer is a switch this run writes."""
        return False

    def global_batch_always_written(self, spec: TrainingSpec) -> bool:
        """A fix that changes the batch must write the global batch (Megatron's scripts)."""
        return False

    def recompute_layers_written(self, spec: TrainingSpec) -> int | None:
        """Layers per full-recompute checkpoint as the file stands (written, else the framework's
        default), when the framework keeps them as a setting of its own that a new layout may keep
        (None: the estimator's resolved value decides)."""
        return None

    def gradient_overlap_setting(self) -> str | None:
        """The setting that overlaps the data-parallel gradient reduction (None: not a switch)."""
        return None

    def optimizer_sharding_field(self, spec: TrainingSpec) -> str:
        """The spec field that shards the optimizer state in this run."""
        return "parallel.zero_stage"

    # -- layout search --------------------------------------------------------------------------

    def search_policy(self, spec: TrainingSpec, inputs: Any, searchable: set[str],
                      expressible: frozenset[str] = frozenset()) -> SearchPolicy:
        """The framework-dependent part of the layout search space (``inputs``: the estimator's
        resolved inputs; ``searchable``: the dimensions searched, those the run's adapter can
        express narrowed by ``--vary`` / ``--fix``; ``expressible``: what the adapter can express,
        whatever is searched)."""
        return SearchPolicy(zero=[0, 1, 2, 3] if "zero" in searchable else [])

    def layout_changes(self, spec: TrainingSpec, cur: Any, new: Any) -> dict[str, Any]:
        """Framework-specific change keys beyond TP / PP / VP / CP / DP (which the search writes
        for every framework): the pipeline engine, sequence parallelism, ZeRO, the distributed
        optimizer. ``cur`` / ``new``: :class:`trainlint.layout.space.Layout`."""
        out: dict[str, Any] = {}
        if self.sequence_parallel_switch(spec) and new.sp != raw_sequence_parallel(spec):
            out["parallel.sequence_parallel"] = new.sp
        if self.zero_is_layout(spec) and new.zero != cur.zero:
            out["parallel.zero_stage"] = new.zero
        if self.distributed_optimizer_switch(spec) and new.dist_opt != cur.dist_opt:
            out["parallel.distributed_optimizer"] = new.dist_opt
        return out

    def writes_virtual_pipeline_per_layers(self, spec: TrainingSpec) -> bool:
        """The run writes interleaving as layers per virtual stage (so a new PP changes it)."""
        return False

    def batch_changes(self, spec: TrainingSpec, cur: tuple[Any, Any, Any], new: tuple[Any, Any, Any],
                      dp: Any) -> dict[str, Any]:
        """The batch change keys (micro, accumulation, global) the file has to write to go from
        ``cur`` to ``new`` at ``dp`` replicas (a value the framework derives is not written)."""
        (cur_micro, cur_accum, cur_global), (micro, accum, global_batch) = cur, new
        out: dict[str, Any] = {}
        if micro != cur_micro:
            out["batch.micro_batch"] = micro
        if accum != cur_accum:
            out["batch.grad_accum"] = accum
        if global_batch != cur_global:
            out["batch.global_batch"] = global_batch
        return out

    def recompute_changes(self, spec: TrainingSpec, base: Any, cur: Any, new: Any,
                          full_layers: Any) -> dict[str, Any]:
        """The recompute change keys; ``full_layers(pp)`` gives (method, layers, keep-as-written)
        of full recompute at ``pp`` stages."""
        return {"memory.recompute": new.recompute} if new.recompute != cur.recompute else {}

    def candidate_fixups(self, out: TrainingSpec, new: Any) -> None:
        """Spec fields a candidate layout implies beyond the change keys (NeoX's pipeline engine)."""

    def mirror_settings(self, out: TrainingSpec, base: Any, changes: dict[str, Any], new: Any,
                        set_setting: Any) -> None:
        """The framework settings the start-up rules read, as the rewritten file would have them
        (``set_setting(spec, key, value)``; None removes the key)."""
        for dotted, key in self.change_settings.items():
            if dotted in changes:
                set_setting(out, key, changes[dotted])

    # -- argument catalogs and schemas ----------------------------------------------------------

    def reads_like_parser(self, text: str) -> bool:
        """For a marker whose name alone says little (``arguments.py``): the text is this framework's parser."""
        return False

    def argument_files(self, read: Any, listing: Any, marker: str) -> tuple[dict[str, str], dict[str, str]] | None:
        """(argument modules, modules that may define config classes they use) of a checkout whose
        ``marker`` was found; ``read(rel)`` gives a text or None, ``listing(folder)`` relative paths.
        None: the marker file alone (and the classes it names)."""
        return None

    def scan_arguments(self, main: dict[str, str], classes: dict[str, str]) -> Any:
        """The :class:`trainlint.frameworks.argscan.ScanResult` of the files :meth:`argument_files` chose."""
        raise NotImplementedError(f"{self.name}: no argument reader")

    def checkout_version(self, read: Any) -> str | None:
        """The version a checkout declares, read as text (``read(rel)``; never imported)."""
        return None

    def schema_name(self) -> str | None:
        """The JSON Schema (``schemas/<name>.schema.json``) of the settings; None: none. Read it
        through :meth:`key_catalog`."""
        return None

    def key_catalog(self, target: Any = None) -> KeyCatalog:
        """The one catalog of the keys this framework defines (:class:`KeyCatalog`): every consumer
        (schema validation, unknown-key findings and their did-you-mean, hovers, "which release
        defines it", the flag table of the checked release) asks it. ``target``: the run's
        :class:`~trainlint.frameworks.target.FrameworkTarget` (``spec.target``); with one that carries a
        release's argument catalog, the answer includes that release (:meth:`KeyCatalog.release`).
        Default: none (:data:`EMPTY_KEYS`)."""
        return EMPTY_KEYS

    def shell_syntax(self) -> bool:
        """The run's main file is a shell script (a comment there must not break a quoted string
        or a continued line)."""
        return False

    def values_as_json(self) -> bool:
        """Settings are JSON/YAML values (a hover shows ``true``, ``null``, lists as JSON), not shell words."""
        return False

    # -- trainlint run --------------------------------------------------------------------------

    def claim_launch(self, launch: Any) -> str | None:
        """For a Python command the shipped launch forms do not recognise (``launch``: a
        :class:`trainlint.adapters.launch.command_line.LaunchCommand` of kind ``none``, with its launchers, entry
        point and invocation): the launch kind (one of ``launch_kinds``) when it is this
        framework's, else None. The built-in frameworks' forms are recognised before this is asked."""
        return None

    def read_launch(self, launch: Any, adapters: Sequence[Any], environment: dict[str, str],
                    frameworks: Any) -> list[Any]:
        """The FileResults (:class:`trainlint.core.results.FileResult`) a ``trainlint run`` command of one
        of ``launch_kinds`` uses, read before the rules run (``frameworks``: the session's project
        framework settings, for the adapters' ``LoadContext``)."""
        return []

    # -- its own start-up rules -----------------------------------------------------------------

    def rules(self) -> Sequence[str | type]:
        """This framework's own start-up rules, as rule bundles: the module name of a bundle (a
        module whose ``trainlint_rules`` hook returns the rules; trainlint's own families are named
        so, which keeps the rules layer out of the framework's imports), or rule classes (a plugin
        framework's, collected into one bundle). The plugin host registers them through the
        ``trainlint_rules`` hook, as every rule is registered, reported as the framework's plugin's
        (:func:`trainlint.project.plugins.register_framework_rules`)."""
        return ()


def raw_sequence_parallel(spec: TrainingSpec) -> bool:
    """Sequence parallelism as the file writes it (whatever the TP)."""
    entry = spec.parallel.sequence_parallel
    value = entry.value if entry is not None else False
    return value.strip().lower() in ("true", "1", "yes", "on") if isinstance(value, str) else bool(value)


def written(spec: TrainingSpec, dotted: str) -> bool:
    """The field is written in the file (not a default, not derived)."""
    entry = spec.get(dotted)
    return entry is not None and entry.provenance.origin is Origin.FILE


# -- the frameworks known to this process ----------------------------------------------------------

_KNOWN: dict[str, Framework] = {}
"""Frameworks met in this process: the built-in ones, and every one a session's registry holds
(:func:`remember_frameworks`), for callers that have a spec but no session (a library call, the
layout search's candidate specs)."""

BUILTIN_PLUGIN = "trainlint.builtin"
"""The module that registers trainlint's own frameworks through ``trainlint_frameworks``."""


def remember_frameworks(frameworks: Sequence[Framework]) -> None:
    """Make ``frameworks`` (a session's, plugin frameworks included) known to :func:`framework_of`."""
    for framework in frameworks:
        _KNOWN.setdefault(framework.name, framework)


def known_frameworks() -> list[Framework]:
    """The frameworks known to this process. Before any session registered its own, the built-in
    ones, loaded by name from the built-in plugin as the plugin host loads it (so the core model
    layer never imports a framework: they register with it)."""
    if not _KNOWN:
        import importlib

        remember_frameworks(importlib.import_module(BUILTIN_PLUGIN).trainlint_frameworks())
    return list(_KNOWN.values())


def framework_of(spec: TrainingSpec | str, frameworks: Frameworks | None = None) -> Framework:
    """The Framework of ``spec``'s run (or of a framework name): among ``frameworks`` (the
    session's), else among those known to this process; :data:`NEUTRAL` for a run no framework
    names (a plugin format without a framework object)."""
    name = spec if isinstance(spec, str) else spec.framework
    if frameworks is not None:
        found = frameworks.by_name.get(name)
        if found is not None:
            return found
    known_frameworks()
    return _KNOWN.get(name, NEUTRAL)


class Frameworks:
    """The session's frameworks by name (built-in and plugin); a run whose framework none names
    gets the neutral :class:`Framework` (a plugin format without a framework object)."""

    def __init__(self, frameworks: Sequence[Framework] = ()) -> None:
        self.by_name: dict[str, Framework] = {f.name: f for f in frameworks}

    def of(self, spec: TrainingSpec | str) -> Framework:
        name = spec if isinstance(spec, str) else spec.framework
        found = self.by_name.get(name)
        return found if found is not None else NEUTRAL

    def __iter__(self):
        return iter(self.by_name.values())

    def __len__(self) -> int:
        return len(self.by_name)


NEUTRAL = Framework()
"""The framework of a run no registered framework names: neutral defaults, no capabilities."""


# -- the data-parallel size: computed in one place ---------------------------------------------------


def data_parallel_size(world: int, model_parallel: int) -> int | None:
    """The data-parallel size of ``world`` GPUs split by the model-parallel product ``model_parallel``
    (TP x PP x CP, as the run's framework forms it: :meth:`Framework.model_parallel_product`); None
    when either is below 1 or the product does not divide the world (the framework refuses such a
    launch: TL101). Every data-parallel size trainlint derives comes from here: the start-up rules
    (:func:`data_parallel`), the estimator (``estimator.inputs.resolve``), the layout search
    (``layout.space``), the fix hints and ``plan``'s run sizing."""
    if world < 1 or model_parallel < 1 or world % model_parallel:
        return None
    return world // model_parallel


@dataclass(frozen=True)
class DataParallel:
    """The data-parallel size of a run and the arithmetic that gave it from the world size."""

    size: int
    how: str
    """The arithmetic, for messages: "world 16 / (TP 2 x PP 2 x CP 1)"."""
    world: Value
    divisors: tuple[tuple[Value | None, str], ...]
    """The model-parallel values divided out, with a note each (for ``also``)."""


def model_parallel_product(spec: TrainingSpec) -> ModelParallel | None:
    """The product the run's framework divides the world size by to get DP, with its description
    (``Framework.model_parallel_product``)."""
    return framework_of(spec).model_parallel_product(spec)


def data_parallel(spec: TrainingSpec) -> DataParallel | None:
    """DP as the run's framework computes it from the spec's world size (:func:`data_parallel_size`
    of its :meth:`Framework.model_parallel_product`); None when the world size is unknown or not
    divisible (TL101 reports that)."""
    world = spec.cluster.world_size
    n = as_int(world)
    product = model_parallel_product(spec)
    if world is None or n is None or product is None:
        return None
    size, how, divisors = product
    dp = data_parallel_size(n, size)
    if dp is None:
        return None
    return DataParallel(dp, f"world size {n} / ({how})", world, divisors)
