"""The estimates of one run's lint are made once per distinct spec (trainlint.project.estimate_memo)."""

from __future__ import annotations

import dataclasses

import trainlint.estimator as estimator_module
from trainlint.cli import main
from trainlint.project.estimate_memo import EstimateMemo
from trainlint.core.provenance import Origin, Provenance, Value
from trainlint.core.spec import TrainingSpec

FILE = Provenance(Origin.FILE, path="x.json", key="k")


def spec() -> TrainingSpec:
    out = TrainingSpec(framework="megatron", path="x.json")
    out.set("model.num_layers", Value(24, FILE))  # set() refuses a name that is not a field
    out.set("model.hidden_size", Value(2048, FILE))
    out.set("parallel.tensor", Value(2, FILE))
    out.settings["--recompute-activations"] = Value(True, FILE)
    return out


class Counting:
    def __init__(self) -> None:
        self.calls: list[TrainingSpec] = []

    def __call__(self, s: TrainingSpec) -> object:
        self.calls.append(s)
        return object()  # a distinct answer per call: a served one is the kept object


def test_equal_specs_estimate_once():
    counting = Counting()
    memo = EstimateMemo(counting)
    first = memo(spec())
    assert memo(spec()) is first  # equal, not the same object
    assert memo(spec().copy()) is first
    assert len(counting.calls) == 1 and memo.made == 1


def test_a_changed_value_estimates_again():
    counting = Counting()
    memo = EstimateMemo(counting)
    first = memo(spec())
    changes = []
    layers = spec()
    layers.set("model.num_layers", Value(25, FILE))
    changes.append(layers)
    setting = spec()
    setting.settings["--recompute-activations"] = Value(False, FILE)  # not in the fingerprint: compared whole
    changes.append(setting)
    origin = spec()
    origin.set("parallel.tensor", Value(2, Provenance(Origin.ASSUMED, note="candidate fix")))  # same value, other origin
    changes.append(origin)
    world = dataclasses.replace(spec(), cluster=dataclasses.replace(spec().cluster, world_size=Value(8, FILE)))
    changes.append(world)
    answers = [memo(s) for s in changes]
    assert all(a is not first for a in answers)
    assert len({id(a) for a in answers}) == len(changes)
    assert memo.made == 1 + len(changes)
    assert memo(spec()) is first  # the first is still kept


def test_a_spec_changed_after_its_estimate_is_not_served_the_old_one():
    counting = Counting()
    memo = EstimateMemo(counting)
    s = spec()
    first = memo(s)
    s.set("model.num_layers", Value(48, FILE))  # the memo kept a snapshot, not this object
    assert memo(s) is not first
    assert memo(spec()) is first


def test_an_estimator_error_is_raised_each_time():
    calls = []

    def failing(s):
        calls.append(s)
        raise RuntimeError("bug")

    memo = EstimateMemo(failing)
    for _ in range(2):
        try:
            memo(spec())
        except RuntimeError:
            pass
    assert len(calls) == 2


def test_one_lint_estimates_each_distinct_spec_once(corpus_dir, monkeypatch, capsys):
    # a Megatron script whose fix searches (TL301, TL304, TL201) try the same candidates
    script = corpus_dir / "NVIDIA__Megatron-LM" / "examples" / "pretrain_gpt3_175B.sh"
    real = estimator_module.estimate
    estimated: list[TrainingSpec] = []

    def recording(s, ctx):
        estimated.append(s.copy())
        return real(s, ctx)

    monkeypatch.setattr(estimator_module, "estimate", recording)
    main(["check", "--jobs", "1", "--exit-zero", "--isolated", str(script)])
    out = capsys.readouterr().out
    assert " TL30" in out or " TL20" in out, "the script should give estimate findings with fix searches"
    assert len(estimated) > 3
    for i, a in enumerate(estimated):
        for b in estimated[i + 1:]:
            assert a != b
