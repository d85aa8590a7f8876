"""trainlint's hook markers (``trainlint.hookimpl``, ``trainlint.core.hookspecs.hookspec``) write what
pluggy's markers write, so pluggy's manager reads a function marked with either alike, and a check
with trainlint's own plugins does not import pluggy (issue 33)."""

from __future__ import annotations

import warnings

import pluggy
import pytest

import trainlint
from trainlint.core import hookspecs
from trainlint.core.hook_markers import HookimplMarker, HookspecMarker

IMPL_OPTIONS = [{}, {"optionalhook": True}, {"tryfirst": True}, {"trylast": True}, {"specname": "trainlint_gpus"},
                {"wrapper": True}, {"hookwrapper": True}, {"optionalhook": True, "trylast": True}]
SPEC_OPTIONS = [{}, {"firstresult": True}, {"historic": True}, {"warn_on_impl": DeprecationWarning("old")},
                {"warn_on_impl_args": {"name": DeprecationWarning("old name")}}]


def _function():
    def trainlint_gpus():
        return []

    return trainlint_gpus


@pytest.mark.parametrize("opts", IMPL_OPTIONS)
def test_an_implementation_is_marked_as_pluggy_marks_it(opts):
    ours, theirs = _function(), _function()
    if opts:
        assert trainlint.hookimpl(**opts)(ours) is ours
        pluggy.HookimplMarker("trainlint")(**opts)(theirs)
    else:
        assert trainlint.hookimpl(ours) is ours
        pluggy.HookimplMarker("trainlint")(theirs)
    assert list(ours.trainlint_impl.items()) == list(theirs.trainlint_impl.items())  # keys, values and order
    assert HookimplMarker("other")(_function()).other_impl == pluggy.HookimplMarker("other")(_function()).other_impl


@pytest.mark.parametrize("opts", SPEC_OPTIONS)
def test_a_specification_is_marked_as_pluggy_marks_it(opts):
    ours = HookspecMarker("trainlint")(**opts)(_function()) if opts else hookspecs.hookspec(_function())
    theirs = pluggy.HookspecMarker("trainlint")(**opts)(_function()) if opts else pluggy.HookspecMarker("trainlint")(_function())
    assert list(ours.trainlint_spec.items()) == list(theirs.trainlint_spec.items())


def test_a_historic_firstresult_spec_is_refused_as_pluggy_refuses_it():
    for marker in (HookspecMarker("trainlint"), pluggy.HookspecMarker("trainlint")):
        with pytest.raises(ValueError, match="historic firstresult"):
            marker(firstresult=True, historic=True)(_function())


def test_pluggys_manager_takes_the_specs_and_a_plugin_marked_with_either_marker():
    manager = pluggy.PluginManager("trainlint")
    manager.add_hookspecs(hookspecs)
    assert manager.hook.trainlint_gpus.spec is not None

    class Ours:
        @trainlint.hookimpl(tryfirst=True)
        def trainlint_gpus(self):
            return [{"id": "ours"}]

    class Theirs:
        @pluggy.HookimplMarker("trainlint")
        def trainlint_gpus(self):
            return [{"id": "theirs"}]

    class Unknown:
        @trainlint.hookimpl
        def trainlint_gpuz(self):
            return []

    manager.register(Theirs(), name="theirs")
    manager.register(Ours(), name="ours")
    manager.register(Unknown(), name="unknown")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert manager.hook.trainlint_gpus() == [[{"id": "ours"}], [{"id": "theirs"}]]  # tryfirst read by pluggy
    with pytest.raises(pluggy.PluginValidationError, match="trainlint_gpuz"):
        manager.check_pending()
