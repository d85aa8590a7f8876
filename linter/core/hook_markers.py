"""The markers of trainlint's hook specifications and implementations, without importing pluggy.

pluggy finds a hook implementation (``PluginManager.register``) or specification (``add_hookspecs``)
by one attribute of the function, ``<project>_impl`` / ``<project>_spec``, a dict of the marker's
options; its markers (``pluggy.HookimplMarker``, ``pluggy.HookspecMarker``) do nothing else. These
two write the very same attribute with the very same dict (keys, defaults, order and the historic +
firstresult refusal of pluggy 1.x), so pluggy's manager reads a function marked here exactly as one
marked with pluggy's own marker, and a plugin may use either (``tests/test_hook_markers.py`` compares
them). Importing pluggy (14 modules, with its TypedDicts whose string annotations make ``typing``
compile, which builds the ``ast`` types) was ~6% of the instructions of a cold one-file check that
never registers a plugin with pluggy's manager (issue 33); pluggy is imported when a manager is made
(:class:`trainlint.project.plugins.PluginHost`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, TypeVar, overload

_F = TypeVar("_F", bound=Callable[..., object])


class HookimplMarker:
    """Marks a function as a hook implementation of ``project_name`` (as ``pluggy.HookimplMarker``):
    ``@hookimpl`` or ``@hookimpl(optionalhook=True, ...)``."""

    __slots__ = ("project_name",)

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name

    @overload
    def __call__(self, function: _F, hookwrapper: bool = ..., optionalhook: bool = ..., tryfirst: bool = ...,
                 trylast: bool = ..., specname: str | None = ..., wrapper: bool = ...) -> _F: ...

    @overload
    def __call__(self, function: None = ..., hookwrapper: bool = ..., optionalhook: bool = ..., tryfirst: bool = ...,
                 trylast: bool = ..., specname: str | None = ..., wrapper: bool = ...) -> Callable[[_F], _F]: ...

    def __call__(self, function: Any = None, hookwrapper: bool = False, optionalhook: bool = False,
                 tryfirst: bool = False, trylast: bool = False, specname: str | None = None,
                 wrapper: bool = False) -> Any:
        def mark(func: _F) -> _F:
            opts = {"wrapper": wrapper, "hookwrapper": hookwrapper, "optionalhook": optionalhook,
                    "tryfirst": tryfirst, "trylast": trylast, "specname": specname}
            setattr(func, self.project_name + "_impl", opts)
            return func

        return mark if function is None else mark(function)


class HookspecMarker:
    """Marks a function as a hook specification of ``project_name`` (as ``pluggy.HookspecMarker``)."""

    __slots__ = ("project_name",)

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name

    @overload
    def __call__(self, function: _F, firstresult: bool = ..., historic: bool = ...,
                 warn_on_impl: Warning | None = ..., warn_on_impl_args: Mapping[str, Warning] | None = ...) -> _F: ...

    @overload
    def __call__(self, function: None = ..., firstresult: bool = ..., historic: bool = ...,
                 warn_on_impl: Warning | None = ...,
                 warn_on_impl_args: Mapping[str, Warning] | None = ...) -> Callable[[_F], _F]: ...

    def __call__(self, function: Any = None, firstresult: bool = False, historic: bool = False,
                 warn_on_impl: Warning | None = None, warn_on_impl_args: Mapping[str, Warning] | None = None) -> Any:
        def mark(func: _F) -> _F:
            if historic and firstresult:
                raise ValueError("cannot have a historic firstresult hook")
            opts = {"firstresult": firstresult, "historic": historic, "warn_on_impl": warn_on_impl,
                    "warn_on_impl_args": warn_on_impl_args}
            setattr(func, self.project_name + "_spec", opts)
            return func

        return mark if function is None else mark(function)
