"""The variables a layer's runs create: the ledger each layer's state keeps.

Keras creates a layer's weights when it first builds it, inside a call: the wrapped
`build` notes their paths, and the run that follows (that call's) takes them. In
Keras 3's symbolic pass the weights are made deferred (no `tf.Variable` yet): the
ledger carries them to the run whose trace creates them. Every other variable a run
creates is told by the creation watch (`run.created`) or by the layer's variables
before and after the run.
"""

from __future__ import annotations

import operator
from typing import Any

from traceguard import _compat
from traceguard._core.verdicts import RunContext

BodyRun = Any  # A finished `runs.BodyRun` (runs imports the layer state, which owns this ledger).


class VariableLedger:
    """What one layer's `build` and runs created that a later run still has to claim.

    Attributes:
        sees_build: Whether the variables the layer's `build` creates are seen (a
            recorded `build`; a watched plain layer's is not).
        built: Paths of the variables `build` just created as Keras built the layer
            in a call: the next run of the body, that call's, takes them.
        deferred: Which of them Keras 3's symbolic pass left waiting for their
            `tf.Variable`, when known.
    """

    __slots__ = ("sees_build", "built", "deferred")

    def __init__(self, sees_build: bool = True) -> None:
        self.sees_build = sees_build
        self.built: tuple[str, ...] = ()
        self.deferred: tuple[Any, ...] = ()

    def forget(self) -> None:
        """Drops what waits: the layer was built in a call that no event records."""
        self.built = self.deferred = ()

    def note_build(self, layer: Any, before: set[int], created: list[Any]) -> None:
        """The layer's `build` ran as Keras built it in a call, creating `created`; `before` is
        the ids of the variables it had before."""
        self.built = tuple(new_variable_paths(_compat.layer_variables(layer), before, created))
        self.deferred = ()  # Which of them wait is not known: the next run walks.

    def created_in_run(self, run: BodyRun) -> tuple[str, ...]:
        """Variables created in the run: by Keras building the layer just before, and in the body.

        For a run whose variables were walked, or a trace that created a TF variable;
        `created_in_symbolic_pass` for Keras 3's symbolic pass."""
        built, self.built = self.built, ()
        before = run.variables_before
        self.deferred = ()
        if before is None:  # Every variable created was seen (`_begin`).
            if not run.created:
                return built
            current = _compat.layer_variables(run.layer)
            in_body = new_variable_paths(current, {id(v) for v in current}, run.created)
            return (*built, *[path for path in in_body if path not in built])
        current = _compat.layer_variables(run.layer)
        # Most runs create nothing: the same variables, in the same order, and no TF variable.
        unchanged = not run.created and len(current) == len(before) \
            and all(map(operator.is_, current, before))
        if run.site.context is RunContext.SYMBOLIC and (built or not unchanged or not self.sees_build):
            # Keras 3 on TF creates their `tf.Variable`s after this run, before the next one.
            self.built = _compat.deferred_variable_paths(current)
        if unchanged:
            return built
        in_body = new_variable_paths(current, {id(v) for v in before}, run.created)
        return (*built, *[path for path in in_body if path not in built])

    def created_in_symbolic_pass(self, run: BodyRun) -> tuple[str, ...]:
        """`created_in_run` for a run in Keras 3's symbolic pass, which lists the variables it makes.

        The variables made while the body ran (and by a `build` just before it, when
        seen), and the paths of the layer's variables whose `tf.Variable` Keras creates
        after the run, which go to the next run: those made in it, and those the
        previous run left waiting that still wait. What an earlier pass left is not
        this run's: a symbolic run creates no `tf.Variable` (Keras creates them as its
        outermost pass ends), so those wait for a trace, or were made between the runs
        (a functional model's build pass, then its output pass). Keras's list says what
        the run made; the layer's variables are walked only when a build before the run
        was seen by its paths, or not seen at all.
        """
        built, self.built = self.built, ()
        new = _compat.deferred_since(run.deferred_mark)
        carried, self.deferred = self.deferred, ()
        if new is not None and self.sees_build and (carried or not built):
            if not built and not run.created:
                if not new:
                    return built  # Nothing made, nothing waiting: most runs.
                if not carried:  # A first pass: what it made is what waits.
                    self.deferred = tuple(new)
                    paths = _compat.variable_paths(new)
                    self.built = tuple(paths)
                    return tuple(dict.fromkeys(paths))
            waiting = [v for v in carried if _compat.backing_variable(v) is None] + new
            self.deferred = tuple(waiting)
            self.built = tuple(_compat.variable_paths(waiting))
            # With `carried`, `built` is what the previous pass left, not a build's.
            claimed = () if carried else built
            in_body = new_variable_paths([], set(), [*run.created, *new])
            return (*claimed, *[path for path in in_body if path not in claimed])
        current = _compat.layer_variables(run.layer)
        self.built = _compat.deferred_variable_paths(current)
        # A seen build's paths are this run's; unseen (a plain layer), `built` is what the previous pass left.
        claimed = built if self.sees_build else ()
        if new is None:  # The pass ended in the run: what it made is not known.
            return claimed
        made = {id(v) for v in new}
        in_body = new_variable_paths(current, {id(v) for v in current if id(v) not in made}, run.created)
        return (*claimed, *[path for path in in_body if path not in claimed])


def made_in_trace(run: BodyRun, layer: Any) -> bool:
    """Whether the layer's weights came from this trace, when its `build` is not seen."""
    return bool(run.created_variables) or _compat.any_created_in_a_trace(_compat.layer_variables(layer))


def new_variable_paths(current: list[Any], before: set[int], created: list[Any]) -> list[str]:
    """The TF variables in `created`, in creation order, then those of `current` not in `before`.

    `current` is the layer's variables, `before` the ids of those it had before.
    """
    paths = []
    if created:
        by_backing = dict(zip([id(_compat.backing_variable(v)) for v in current],
                              _compat.variable_paths(current)))
        paths = [by_backing.get(id(v)) or _compat.variable_path(v) for v in created]
    paths += _compat.variable_paths([v for v in current if id(v) not in before])
    return list(dict.fromkeys(paths))
