"""Where numba caches this project's compiled kernels: one user-wide directory shared by every install.

Numba's default puts a kernel's cache in the ``__pycache__`` beside its source file, so each new install (a fresh
venv, a wheel, a clone) compiles every kernel again: 30-70 s on two cores.  Yet what decides whether a cached
kernel is still right is the code, not where it lies.  ``PackageCacheLocator`` keys the directory by the code:

    $SOLVED2048_NUMBA_CACHE (default ``$XDG_CACHE_HOME/solved2048/numba`` or ``~/.cache/solved2048/numba``)
        / py<major><minor>-numba<version> / <sha256 of all the project's kernel modules, 16 hex> / <module>

The digest covers every module of the project that defines kernels (and ``env2048/shape.py``, whose constants the
kernels read), not just the kernel's own file: numba checks only a kernel's own source file before it loads a
cached kernel, so a kernel whose callee (inlined from another module) changed would otherwise be loaded stale.
Editing a module without kernels recompiles nothing; a new global constant that kernels read from such a module
belongs in ``KERNEL_CONSTANTS``.  Two versions of the project used side by side never share a cache file.
Directories of other versions unused for ``STALE_DAYS`` are removed when a new one is made.  A user's own
``NUMBA_CACHE_DIR`` still wins, and functions outside the project's packages are cached as numba caches them.

Importing this module installs the locator (``env2048`` imports it before any of its kernels, and the other
packages import it first).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

import numba
from numba.core import caching

#: The project's top-level packages: their kernels are cached by ``PackageCacheLocator``.
PACKAGES = frozenset({"env2048", "solver", "oracle", "agents", "experiments"})


#: Modules without kernels whose constants kernels read (frozen into the compiled code): part of the digest.
KERNEL_CONSTANTS = frozenset({"env2048/shape.py"})
#: Cache directories of other versions of the project unused for this many days are removed.
STALE_DAYS = 30


def cache_base() -> Path:
    """``$SOLVED2048_NUMBA_CACHE``, else ``solved2048/numba`` in ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    base = os.environ.get("SOLVED2048_NUMBA_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = os.path.join(xdg, "solved2048", "numba")
    return Path(base)


def cache_root() -> Path:
    """The user-wide kernel cache of this Python and numba: ``cache_base() / py<XY>-numba<version>``."""
    return cache_base() / f"py{sys.version_info.major}{sys.version_info.minor}-numba{numba.__version__}"


@functools.cache
def kernels_digest() -> str:
    """sha256 (16 hex) over the paths, relative to the installation, and contents of the project's modules that
    define kernels (``njit(``) and of ``KERNEL_CONSTANTS``."""
    site = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for package in sorted(PACKAGES):
        for path in sorted((site / package).rglob("*.py")):
            source, relative = path.read_bytes(), path.relative_to(site).as_posix()
            if b"njit(" in source or relative in KERNEL_CONSTANTS:
                digest.update(relative.encode() + b"\0" + source + b"\0")
    return digest.hexdigest()[:16]


@functools.cache
def version_dir(root: Path) -> Path:
    """``root / kernels_digest()``, its time of use set to now; on first use in this process, removes other
    versions' directories unused for ``STALE_DAYS``."""
    here = root / kernels_digest()
    if here.exists():
        os.utime(here)
    else:
        remove_stale_versions(root, keep=here.name)
    return here


def remove_stale_versions(root: Path, keep: str) -> None:
    """Remove the directories in ``root`` but ``keep`` whose time of use is older than ``STALE_DAYS``."""
    if not root.is_dir():
        return
    cutoff = time.time() - STALE_DAYS * 86400
    for other in root.iterdir():
        if other.name != keep and other.is_dir() and other.stat().st_mtime < cutoff:
            shutil.rmtree(other, ignore_errors=True)


class PackageCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """A numba cache locator for the project's kernels: ``cache_root() / kernels_digest() / module``."""

    def __init__(self, py_func, py_file: str):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(version_dir(cache_root()) / py_func.__module__)

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if (getattr(py_func, "__module__", None) or "").split(".")[0] not in PACKAGES:
            return None
        return super().from_function(py_func, py_file)  # None when the file or the directory is unusable


def install() -> None:
    """Put ``PackageCacheLocator`` first among numba's locators, after a user's ``NUMBA_CACHE_DIR``.

    Must run before the first ``@njit(cache=True)`` of the project is applied: importing this module runs it, and
    each package's ``__init__`` imports it first; calling it again does nothing."""
    classes = caching.CacheImpl._locator_classes
    if PackageCacheLocator in classes:
        return
    after_user_dir = 1 if classes and classes[0] is caching.UserProvidedCacheLocator else 0
    classes.insert(after_user_dir, PackageCacheLocator)


install()
