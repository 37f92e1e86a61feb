"""A progress bar while numba compiles the project's kernels: what a new user waits for on first use.

Numba compiles a kernel the first time it is called with new argument types, unless its on-disk cache
(:mod:`env2048.kernel_cache`) holds it.  :func:`compile_progress` shows, from the first real compilation only,
a bar (``tqdm.auto``: a terminal line, or a widget in a notebook) that counts the functions compiled and names
the one being compiled; when every kernel loads from the cache, it shows nothing.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from numba.core import event
from tqdm.auto import tqdm

#: Packages whose functions numba compiles on the way (its overloads of Python and numpy): not counted.
LIBRARIES = frozenset({"numba", "numpy"})
#: What the bar says.
COMPILING = "compiling the solver's kernels (once per install)"


class CompileCounter(event.Listener):
    """A numba ``numba:compile`` listener that counts finished compilations (``count``; numba's overloads in
    :data:`LIBRARIES`, compiled on the way, are not counted) on a bar made at the first one."""

    def __init__(self, desc: str = COMPILING):
        self.desc, self.bar, self.count = desc, None, 0
        self.lock = threading.Lock()
        self.ours = threading.local()  # per thread: a stack, is each compilation in progress one of ours

    def _stack(self) -> list[bool]:
        if not hasattr(self.ours, "stack"):
            self.ours.stack = []
        return self.ours.stack

    def on_start(self, ev) -> None:
        fn = ev.data["dispatcher"].py_func
        module = getattr(fn, "__module__", None) or ""
        ours = module.split(".")[0] not in LIBRARIES
        self._stack().append(ours)
        if not ours:
            return
        with self.lock:
            if self.bar is None:
                self.bar = tqdm(desc=self.desc, unit=" functions", dynamic_ncols=True)
            self.bar.set_postfix_str(f"{module}.{fn.__qualname__}", refresh=True)

    def on_end(self, ev) -> None:
        if not self._stack().pop():
            return
        with self.lock:
            self.count += 1
            if self.bar is not None:
                self.bar.update()

    def close(self) -> None:
        with self.lock:
            if self.bar is not None:
                self.bar.set_postfix_str("done", refresh=False)
                self.bar.close()


@contextmanager
def compile_progress(enabled: bool = True, desc: str = COMPILING):
    """While the block runs, count numba's compilations on a progress bar shown from the first one (none if
    every kernel loads from the cache, or if not ``enabled``).  Yields the counter (``.count``: functions
    compiled so far)."""
    counter = CompileCounter(desc)
    if not enabled:
        yield counter
        return
    try:
        with event.install_listener("numba:compile", counter):
            yield counter
    finally:
        counter.close()
