"""The stage plan a container keeps: rebuilt only when what it was built from changes.

Building a :class:`~turnwire.rendering.relay.StagePlan` reads every stage's implementations
from the plugin manager; a render reuses the last plan while the plugins, the stage providers'
values and the tracing flag are the same objects.
"""

from __future__ import annotations

import operator
from typing import Any

from turnwire.rendering.relay import StagePlan

__all__ = ["PlanCache", "stage_plan"]


class PlanCache:
    """The last stage plan a container built and what it was built from: the plugin manager's
    implementations of each stage, the stage providers' values and the tracing flag."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        # (inputs, plan) as one object: two renders on two threads never leave the inputs of
        # one beside the plan of the other
        self.last: tuple[tuple[Any, ...], StagePlan] | None = None


def stage_plan(plugin_manager: Any, trace: bool, cache: PlanCache, **overrides: Any) -> StagePlan:
    """The stage plan, the last one again while nothing it was built from changed (a plugin
    registered or unregistered, a stage provider overridden, tracing switched)."""
    # A manager that counts its changes (TurnwirePluginManager) is current when its count is:
    # the plugins, the flag and the overrides, compared by identity, are then the inputs.
    generation = getattr(plugin_manager, "generation", None)
    last = cache.last
    if generation is not None:
        counted = (plugin_manager, generation, trace, *overrides.values())
        if last is not None and _same_inputs(last[0], counted):
            return last[1]
    # One snapshot of the implementations for both the inputs and the plan: a plugin
    # registered on another thread between the two would leave a plan kept under inputs it was
    # not built from (stale until the plugins change again). The count is read before the
    # snapshot, so a change made meanwhile leaves a plan kept under an older count.
    impls = StagePlan.hookimpls(plugin_manager)
    inputs = StagePlan.inputs(plugin_manager, overrides, trace=trace, hookimpls=impls)
    if generation is None and last is not None and _same_inputs(last[0], inputs):
        return last[1]
    plan = StagePlan(plugin_manager, overrides, trace=trace, hookimpls=impls)
    cache.last = (counted if generation is not None else inputs, plan)
    return plan


def _same_inputs(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Element by element the same objects (implementations and overrides by identity)."""
    return len(old) == len(new) and all(map(operator.is_, old, new))
