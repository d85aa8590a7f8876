"""TL900: Memory and speed could not be estimated; says which inputs to supply."""

from __future__ import annotations

from typing import Iterator

from trainlint.core.diagnostics import Severity
from trainlint.rules import Finding, Rule, RuleContext
from trainlint.estimator.inputs import UNJUDGED, unjudged
from trainlint.rules.estimation.scope import unmodelled
from trainlint.rules.estimation.world_bound import verdict_of
from trainlint.core.spec import TrainingSpec


_WHAT = {"cluster.world_size": "how many GPUs the run uses", "batch.micro_batch": "the micro-batch size",
         "model.seq_length": "the sequence length"}


def _unstated(spec: TrainingSpec, field: str, assumed: object) -> str:
    """Why an input the rules need is an assumption, and how to give it."""
    written = spec.get(field)
    if written is not None and written.provenance.uncertain:
        # the script states one, from a branch or a scheduler variable's default (${SLURM_NNODES:-1})
        return (f"{_WHAT[field]} is known only at launch (the script's {assumed} rests on an undecided branch or a "
                f"scheduler variable's default such as ${{SLURM_NNODES:-1}}; give {UNJUDGED[field]})")
    return f"{_WHAT[field]} is not stated (`trainlint estimate` assumes {assumed}; give {UNJUDGED[field]})"


class EstimateUnavailable(Rule):
    """## What it does
    Reports, once per run, that memory and speed could not be estimated, and which inputs to
    supply (a model preset or config.json, the number of nodes, the micro batch...).

    ## Why is this bad?
    Without an estimate the memory, throughput and communication rules cannot run: the run is
    not known to be safe, only unchecked. trainlint never guesses a missing model silently.

    ## Example
    A bare DeepSpeed JSON: it has no model and no world size.

    ## Fix
    `trainlint check --model llama2-7b --nodes 4 ds_config.json`, or `model`/`nodes` in
    `[tool.trainlint]`.
    """

    code = "TL900"
    release_dependent = False
    name = "estimate-unavailable"
    summary = "Memory and speed could not be estimated; says which inputs to supply."
    default_severity = Severity.INFO
    needs_estimate = True

    def check(self, spec: TrainingSpec, ctx: RuleContext) -> Iterator[Finding]:
        est = ctx.estimate
        if est is None:
            return
        gaps = unmodelled(spec)
        if gaps and not all(g.training for g in gaps):
            yield Finding("memory and speed not estimated: " + "; ".join(f"{g.setting}: {g.why}" for g in gaps))
            return
        if getattr(est, "ok", False):
            if gaps:
                yield Finding("memory and speed not judged: the estimator does not model this run: "
                              + "; ".join(f"{g.setting} ({g.why})" for g in gaps))
            elif unjudged(est):
                said = "; ".join(_unstated(spec, a.field, a.value) for a in unjudged(est))
                if verdict_of(spec, est, ctx.estimator, ctx.shared).exists():
                    yield Finding(f"speed and communication not judged: {said}; memory per GPU is judged at the "
                                  "least it takes over every data-parallel size the config allows")
                else:
                    yield Finding(f"memory and speed not judged: {said}")
            return
        if gaps:
            yield Finding("memory and speed not judged: the estimator does not model this run: "
                          + "; ".join(f"{g.setting} ({g.why})" for g in gaps))
            return
        by_how: dict[str, list[str]] = {}
        for item in est.missing:
            by_how.setdefault(item.how, []).append(item.what)
        missing = "; ".join(f"{', '.join(whats)} ({how})" for how, whats in by_how.items())
        yield Finding(f"memory and speed not estimated, missing: {missing}")
