"""Backward pass: optimal values by backward induction, from the largest age down.

For age a: afterstate values from the state values of ages a+2 and a+4 (the spawn model's aggregate over the
spawned children), then state values ``max_a r + V(afterstate)`` with the optimal action(s).  Only the state
layers of ages a+2 and a+4 are held in memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import numpy as np
from tqdm.auto import tqdm

from .bellman import GROUP, afterstate_values_grouped, state_values_grouped
from .forward import n_chunks_for
from .kernels import TIE_TOLERANCE
from .spec import SolveSpec
from .value_index import ValueIndex, build_value_index, empty_value_index


class CorruptLayer(RuntimeError):
    """A layer refers to a board the next layers do not hold."""


def solve_states(
    spec: SolveSpec,
    states: np.ndarray,
    afterstates: np.ndarray,
    afterstate_values_: np.ndarray,
    tie: tuple[float, float] = (TIE_TOLERANCE, 0.0),
) -> tuple[np.ndarray, np.ndarray]:
    """``(state_values float64[n], best_actions uint8[n])`` of one age from its afterstate values; actions within
    ``tie = (relative, absolute)`` of the best are all best."""
    s_values, best, missing = state_values_grouped(
        states,
        spec.tables,
        spec.rules,
        spec.objective == "score",
        build_value_index(afterstates, afterstate_values_),
        n_chunks_for(states.size),
        float(tie[0]),
        float(tie[1]),
        GROUP,
    )
    if missing >= 0:
        raise CorruptLayer(f"state {int(states[missing]):#x} has an afterstate missing from its layer")
    return s_values, best


def solve_age(
    spec: SolveSpec,
    states: np.ndarray,
    afterstates: np.ndarray,
    next2: ValueIndex,
    next4: ValueIndex,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values of one age: ``(state_values float64[n], best_actions uint8[n], afterstate_values float64[m])``.

    ``next2`` / ``next4``: ``build_value_index(ids, values)`` of the states of age a+2 / a+4.
    """
    a_values = afterstate_values(spec, afterstates, next2, next4)
    return (*solve_states(spec, states, afterstates, a_values), a_values)


def afterstate_values(spec: SolveSpec, afterstates: np.ndarray, next2: ValueIndex, next4: ValueIndex) -> np.ndarray:
    """Values (``float64[m]``) of sorted ``afterstates`` from value indexes of the states of ages a+2 and a+4;
    :class:`CorruptLayer` if a spawned child is missing."""
    a_values, missing = afterstate_values_grouped(
        afterstates,
        spec.tables,
        spec.p4,
        spec.spawn_code,
        next2,
        next4,
        n_chunks_for(afterstates.size),
        GROUP,
    )
    if missing >= 0:
        raise CorruptLayer(f"afterstate {int(afterstates[missing]):#x} has a child missing from the next layers")
    return a_values


def run_backward(
    spec: SolveSpec,
    ages: list[int],
    load_layer: Callable[[int], tuple[np.ndarray, np.ndarray]],
    load_state_values: Callable[[int], np.ndarray],
    on_age: Callable[[int, np.ndarray, np.ndarray, np.ndarray], None],
    done: Iterable[int] = (),
    progress: bool = True,
) -> None:
    """Solve every age of ``ages`` not in ``done``, largest first.

    ``load_layer(age) -> (states, afterstates)``; ``load_state_values(age)`` reloads a finished age's state
    values (when resuming); ``on_age(age, state_values, best_actions, afterstate_values)`` stores a result.
    """
    done = set(done)
    present = set(ages)
    window: dict[int, ValueIndex] = {}

    def layer_values(age: int) -> ValueIndex:
        if age not in present:
            return empty_value_index()
        if age not in window:
            window[age] = build_value_index(load_layer(age)[0], load_state_values(age))
        return window[age]

    todo = [a for a in sorted(ages, reverse=True) if a not in done]
    bar = tqdm(
        total=len(ages),
        initial=len(ages) - len(todo),
        desc=f"backward {spec.board}",
        unit=" ages",
        disable=not progress,
    )
    t0, work = time.perf_counter(), 0
    try:
        for age in todo:
            states, afterstates = load_layer(age)
            nexts = layer_values(age + 2), layer_values(age + 4)
            s_values, best, a_values = solve_age(spec, states, afterstates, *nexts)
            on_age(age, s_values, best, a_values)
            del nexts
            for old in [k for k in window if k > age + 2]:
                del window[old]  # ages a-2 and a-4 need only a, a+2 from here on: two tables at a time, not three
            window[age] = build_value_index(states, s_values)
            work += states.size + afterstates.size
            rate = work / max(time.perf_counter() - t0, 1e-9)
            bar.set_postfix_str(f"age {age}, {rate:,.0f} states+afterstates/s", refresh=False)
            bar.update()
    finally:
        bar.close()
