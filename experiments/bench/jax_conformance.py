"""The JAX game against the numba kernels on a million fresh random (board, action) pairs, and the speed of both.

    python -m experiments.bench.jax_conformance [--pairs 1000000] [--seed 1]

The pairs are spread evenly over the seven shapes of :data:`env2048.conformance.SHAPES` (2x2 to 5x5), exponents up
to 29; each shape's afterstates, rewards and legality must agree bit for bit.  Prints the disagreements (0) and
each side's moves per second on this machine (JAX jitted and vmapped, compile excluded; numba on one core).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> int:
    import jax
    import jax.numpy as jnp

    from env2048 import jax as g2048
    from env2048.conformance import SHAPES, move_cases
    from env2048.grid import move_many
    from env2048.tables import line_tables_for

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    per = -(-args.pairs // len(SHAPES))
    moves = jax.jit(jax.vmap(g2048.afterstate))
    total = wrong = 0
    print(f"{per * len(SHAPES):,} pairs, {per:,} per shape, on {jax.devices()[0].platform}:")
    for rows, cols in SHAPES:
        cases = move_cases(rng, rows, cols, per, top=29)
        boards, actions = jnp.asarray(cases["boards"], jnp.int32), jnp.asarray(cases["actions"])
        jax.block_until_ready(moves(boards, actions))  # compile
        start = time.perf_counter()
        after, reward, moved = jax.block_until_ready(moves(boards, actions))
        jax_seconds = time.perf_counter() - start
        flat = cases["boards"].reshape(per, -1)
        start = time.perf_counter()
        move_many(flat, cases["actions"].astype(np.int64), rows, cols, line_tables_for(rows, cols))
        numba_seconds = time.perf_counter() - start
        bad = (
            (np.asarray(after) != cases["after"]).reshape(per, -1).any(axis=1)
            | (np.asarray(reward) != cases["reward"])
            | (np.asarray(moved) != cases["legal"])
        )
        total, wrong = total + per, wrong + int(bad.sum())
        print(
            f"  {rows}x{cols}: {int(bad.sum())} disagreements; JAX {per / jax_seconds / 1e6:.2f} M moves/s, "
            f"numba {per / numba_seconds / 1e6:.2f} M moves/s"
        )
    print(f"{wrong} of {total:,} pairs disagree")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
