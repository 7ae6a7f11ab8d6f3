"""The stage relay: how the pipeline and composite stages call the render stages.

A :class:`StageRelay` has one attribute per stage. Calling it runs the stage with the caller's
per-call arguments plus the option arguments injected by name (and ``stages`` = the relay), so
overriding a stage, by plugin or by container provider, changes every caller at once. An
argument can be both (``model`` of ``fingerprint_prefix``): the caller's value wins, on every
path alike.

Dispatch is pluggy's, never a copy of it: a stage with several implementations runs through
pluggy's own hook execution (first non-None wins, ``tryfirst`` before ``trylast``, last
registered first), over the implementations the plan was built from. A stage with exactly one
plain implementation, the usual case, is that implementation, called directly (a partial with
the options); a container override is its callable. A wrapper or tracing goes through the
plugin manager's hook caller.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from turnwire.hookspecs import STAGES

__all__ = ["HOOK", "StagePlan", "StageRelay", "positional_caller"]


class _Hook:
    """Marker: "run this stage through the plugin manager" (a stage provider's default)."""

    def __repr__(self) -> str:
        return "HOOK"


HOOK = _Hook()

_Caller = Callable[..., Any]


def _parameter_names(function: Callable[..., Any]) -> tuple[str, ...]:
    parameters = inspect.signature(function).parameters.values()
    return tuple(
        p.name
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
    )


class StagePlan:
    """The stages resolved once per plugin-manager state: what the relay will call.

    :param plugin_manager: holds the hookspecs and every registered implementation.
    :param overrides: stage name → callable replacing the stage (container overrides); the
        marker :data:`HOOK` or a missing key keeps the plugin manager's implementations.
    :param trace: call every stage through pluggy so hook-call monitoring sees it.
    """

    @staticmethod
    def hookimpls(plugin_manager: pluggy.PluginManager) -> dict[str, list[Any]]:
        """Stage name → its registered implementations, as the plugin manager holds them now:
        one snapshot to build a plan and its :meth:`inputs` from (a plugin registered on
        another thread meanwhile is in neither, so the plan is never kept under inputs it was
        not built from)."""
        hook = plugin_manager.hook
        return {name: getattr(hook, name).get_hookimpls() for name in STAGES}

    @staticmethod
    def inputs(
        plugin_manager: pluggy.PluginManager,
        overrides: Mapping[str, Any] | None = None,
        *,
        trace: bool = False,
        hookimpls: Mapping[str, list[Any]] | None = None,
    ) -> tuple[Any, ...]:
        """What a plan is built from, as one flat tuple of objects to compare by identity: the
        plugin manager, the flag, and for each stage its override, how many implementations
        are registered, and those (from ``hookimpls`` when given, see :meth:`hookimpls`)."""
        overrides = overrides or {}
        hook = plugin_manager.hook
        flat: list[Any] = [plugin_manager, trace]
        for name in STAGES:
            impls = (
                hookimpls[name] if hookimpls is not None else getattr(hook, name).get_hookimpls()
            )
            flat += (overrides.get(name, HOOK), len(impls), *impls)
        return tuple(flat)

    def __init__(
        self,
        plugin_manager: pluggy.PluginManager,
        overrides: Mapping[str, Any] | None = None,
        *,
        trace: bool = False,
        hookimpls: Mapping[str, list[Any]] | None = None,
    ) -> None:
        self.plugin_manager = plugin_manager
        self.argnames: dict[str, tuple[str, ...]] = {}
        self.targets: dict[str, tuple[str, Any]] = {}
        # memo.stage_key's work that depends on the plan alone, by the stages asked about
        self.stage_keys: dict[Any, Any] = {}
        overrides = overrides or {}
        for name in STAGES:
            caller = getattr(plugin_manager.hook, name)
            spec = caller.spec
            if spec is None:  # pragma: no cover - hookspecs are always added first
                raise RuntimeError(f"stage {name} has no hookspec")
            self.argnames[name] = tuple(spec.argnames)
            override = overrides.get(name, HOOK)
            if override is not HOOK and override is not None:
                if not callable(override):
                    raise TypeError(f"the override of stage {name} is not callable")
                self.targets[name] = ("override", (override, _parameter_names(override)))
                continue
            impls = hookimpls[name] if hookimpls is not None else caller.get_hookimpls()
            if trace or any(i.hookwrapper or i.wrapper for i in impls):
                self.targets[name] = ("pluggy", caller)
            elif len(impls) == 1:
                self.targets[name] = ("only", (impls[0].function, tuple(impls[0].argnames)))
            else:
                # pluggy's own execution over this snapshot of the implementations (the plan's
                # memo key names these same functions)
                functions = tuple((i.function, tuple(i.argnames)) for i in reversed(impls))
                self.targets[name] = ("hooks", (caller._hookexec, name, list(impls), functions))

    def declared(self, stage: str, capability: str) -> Any:
        """What the one implementation of ``stage`` declares as ``capability`` (an attribute
        of the function), or ``None``. The warm path asks implementations what they promise;
        it never recognises one, so a replacement that declares the same takes the same path
        (the hookspecs name what each stage may declare)."""
        kind, target = self.targets[stage]
        if kind not in ("only", "override"):
            return None
        return getattr(target[0], capability, None)


_STAGE_NAMES = frozenset(STAGES)


class _Injected(dict[str, dict[str, Any]]):
    """Stage name → the options injected into it by name, each worked out on first use."""

    __slots__ = ("_argnames", "_options")

    def __init__(self, options: dict[str, Any], argnames: Mapping[str, tuple[str, ...]]) -> None:
        super().__init__()
        self._options, self._argnames = options, argnames

    def __missing__(self, name: str) -> dict[str, Any]:
        options = self._options
        injected = {a: options[a] for a in self._argnames[name] if a in options}
        self[name] = injected
        return injected


class StageRelay:
    """Calls the render stages with injected options; passed to composites as ``stages``.

    :param plan: the resolved stages.
    :param options: option values by argument name (``self_identity``, ``warn``, ...).
    """

    def __init__(self, plan: StagePlan, options: Mapping[str, Any]) -> None:
        self.plan = plan
        self.options = dict(options)
        self.options["stages"] = self
        # Each stage is bound when it is first called (a render calls about half of them).
        self.injected: dict[str, dict[str, Any]] = _Injected(self.options, plan.argnames)

    def fork(self) -> StageRelay:
        """A relay with the same plan and options (the same ``warn`` and ``scratch``), that
        binds its stages anew: what one part of a render reaches through it is then
        :meth:`reached`, composites' sub-stages included (they are handed the fork)."""
        return StageRelay(self.plan, self.options)

    def release(self) -> None:
        """Let go of everything this relay holds. A relay holds itself (``options["stages"]``,
        and the stages bound on it), so unreleased it is left to the garbage collector; a
        render releases its relays when it ends, and reference counting frees them there and
        then. A released relay calls no stage again."""
        vars(self).clear()

    def reached(self) -> tuple[str, ...]:
        """The stages bound on this relay so far (each called, or about to be), sorted."""
        return tuple(sorted(name for name in vars(self) if name in _STAGE_NAMES))

    def __getattr__(self, name: str) -> _Caller:
        """Stage ``name``, bound on first use and kept as an attribute (so this runs once)."""
        if name not in _STAGE_NAMES:
            raise AttributeError(f"no stage named {name!r}")
        kind, target = self.plan.targets[name]
        bound = self._bind(name, kind, target, self.plan.argnames[name], self.injected[name])
        setattr(self, name, bound)
        return bound

    @staticmethod
    def _bind(
        name: str, kind: str, target: Any, argnames: tuple[str, ...], injected: dict[str, Any]
    ) -> _Caller:
        if kind == "pluggy":

            def via_pluggy(**kwargs: Any) -> Any:
                return target(**{**injected, **kwargs})

            via_pluggy.__name__ = name
            return via_pluggy

        if kind == "override":
            function, names = target
            full = set(names) >= set(argnames)

            def via_override(**kwargs: Any) -> Any:
                merged = {**injected, **kwargs}
                if full:
                    return function(**merged)
                return function(**{n: merged[n] for n in names})

            via_override.__name__ = name
            return via_override

        if kind == "hooks":
            execute, hook_name, impls, _ = target

            def via_hooks(**kwargs: Any) -> Any:
                return execute(hook_name, impls, {**injected, **kwargs}, True)

            via_hooks.__name__ = name
            return via_hooks

        # "only": the one implementation, called by keyword with the options merged in
        function, names = target
        if set(names) != set(argnames):  # it takes fewer arguments than the hookspec offers

            def only_some(**kwargs: Any) -> Any:
                merged = {**injected, **kwargs}
                return function(**{n: merged[n] for n in names})

            only_some.__name__ = name
            return only_some
        # A partial merges the injected options in C, the cheapest call there is (call
        # keywords win over a partial's); with no option to inject, the implementation itself.
        only: _Caller = function
        return only if not injected else functools.partial(only, **injected)


def positional_caller(relay: StageRelay, name: str, arguments: tuple[str, ...]) -> _Caller:
    """Stage ``name`` of ``relay`` for a caller passing ``arguments``, in this order, by
    position: what a loop over thousands of records calls once per record.

    When the stage is one implementation that takes every one of ``arguments`` (and nothing
    but them and injected options), it is called by position in the order of its parameters,
    as pluggy calls an implementation: no keyword dict is built or filtered per call. Any
    other stage (several implementations, an override, pluggy) goes through the relay's
    attribute, with the same arguments by keyword.
    """
    kind, target = relay.plan.targets[name]
    attribute: _Caller = getattr(relay, name)
    if kind != "only":
        return lambda *values: attribute(**dict(zip(arguments, values, strict=True)))
    function, names = target
    injected = relay.injected[name]
    if not set(arguments) <= set(names) <= set(arguments) | injected.keys():
        return lambda *values: attribute(**dict(zip(arguments, values, strict=True)))
    if names[-len(arguments) :] == arguments:
        # the options first, the caller's values last: a partial prepends the options in C
        return functools.partial(function, *(injected[n] for n in names[: -len(arguments)]))
    if len(arguments) == 1 and names[0] == arguments[0]:
        rest = tuple(injected[n] for n in names[1:])

        def first_then_options(value: Any) -> Any:
            return function(value, *rest)

        return first_then_options
    if len(arguments) == 2 and names[:2] == arguments:
        rest = tuple(injected[n] for n in names[2:])

        def two_then_options(first: Any, second: Any) -> Any:
            return function(first, second, *rest)

        return two_then_options
    return lambda *values: attribute(**dict(zip(arguments, values, strict=True)))
