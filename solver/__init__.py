"""solver package (see README)."""

import env2048.kernel_cache  # noqa: F401  (numba caches the kernels user-wide: env2048.kernel_cache)
