"""Figures of the solved game, from this project's own tables (in the spirit of seed 000's Figs. 1 and 7–10).

    python -m experiments.figures --board 3x3 [--out results/figures] [--no-variants]

Per age (sum of tiles), written as ``OUT/BOARD-solved.png`` and ``OUT/BOARD-by-age.csv``:

* states and afterstates (Fig. 1);
* the value of the best afterstate, for random spawns and for the optimistic and pessimistic spawn variants
  (the tile's value is drawn as usual, its cell is the best or worst one for the player; Fig. 7; the variant
  tables are solved on first use, ``--no-variants`` skips them);
* afterstates from which the next spawn can end the game, as a fraction of the age's afterstates, and the mean
  probability that it does (Fig. 8);
* mean empty cells of the states (Fig. 9);
* mean gap between the best and the other legal moves, ``Q*(s, best) − Q*(s, a)`` averaged over the other
  legal moves and over the states with at least two, and the fraction of those states whose two best moves are
  within ``NEAR_TIE`` points (Fig. 10 and Fig. 8's dotted line).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numba
import numpy as np
from tqdm.auto import tqdm

from env2048.kernels import canonical_packed, legal_bits_packed, move_packed
from env2048.tables import board_tables
from solver.format import Table
from solver.provision import cached_table
from solver.spec import SolveSpec

#: Two moves whose optimal values differ by less than this many points count as a near tie.
NEAR_TIE = 1.0
FIELDS = (
    "age",
    "states",
    "afterstates",
    "best_value",
    "best_value_optimistic",
    "best_value_pessimistic",
    "terminal_afterstate_fraction",
    "terminal_probability",
    "mean_empty_cells",
    "mean_gap",
    "near_tie_fraction",
)


@numba.njit(cache=True)
def layer_statistics(states, afters, after_values, rows, cols, moves, sym_lines, sym_bytes, p4):
    """Sums over one age layer of a solved table.

    ``states uint64[n]``, ``afters uint64[m]`` (sorted canonical IDs of the age) and ``after_values float64[m]``.
    Returns ``float64[7]``: empty cells summed over states; number of states with >= 2 legal moves; their mean gaps
    (best minus each other legal move, averaged per state) summed; how many of them have a near tie; afterstates
    with a spawn that ends the game; the probabilities of ending summed over afterstates; the best afterstate
    value (-inf when the age has no afterstate).
    """
    cells = rows * cols
    out = np.zeros(7)
    out[6] = -np.inf
    q = np.empty(4)
    for i in range(states.shape[0]):
        s = states[i]
        for c in range(cells):
            out[0] += ((s >> np.uint64(4 * c)) & np.uint64(15)) == 0
        n_legal = 0
        for a in range(4):
            after, reward = move_packed(s, a, rows, cols, moves)
            if after == s:
                continue
            key = canonical_packed(after, rows, cols, sym_lines, sym_bytes)
            j = np.searchsorted(afters, key)
            if j >= afters.shape[0] or afters[j] != key:
                raise KeyError("an afterstate of a state is missing from its age layer")
            q[n_legal] = reward + after_values[j]
            n_legal += 1
        if n_legal >= 2:
            qs = np.sort(q[:n_legal])
            best = qs[n_legal - 1]
            out[1] += 1
            out[2] += (best * (n_legal - 1) - qs[: n_legal - 1].sum()) / (n_legal - 1)
            out[3] += best - qs[n_legal - 2] < 1.0  # NEAR_TIE
    for i in range(afters.shape[0]):
        b = afters[i]
        out[6] = max(out[6], after_values[i])
        empty = 0
        for c in range(cells):
            empty += ((b >> np.uint64(4 * c)) & np.uint64(15)) == 0
        p_end = 0.0
        for c in range(cells):
            if ((b >> np.uint64(4 * c)) & np.uint64(15)) == 0:
                for tile in range(1, 3):
                    child = b | (np.uint64(tile) << np.uint64(4 * c))
                    if legal_bits_packed(child, rows, cols, moves) == 0:
                        p_end += (1.0 - p4 if tile == 1 else p4) / empty
        out[4] += p_end > 0
        out[5] += p_end
    return out


def best_values_by_age(path) -> dict[int, float]:
    """The best afterstate value of every age of a table."""
    with Table(path) as table:
        return {
            c.age: float(table.layer(c.age, names=("afterstate_values",))["afterstate_values"].max())
            for c in table.counts()
            if c.afterstates
        }


def solved_game_by_age(board: str, variants: bool = True, progress: bool = True) -> list[dict]:
    """One row per age with :data:`FIELDS` (NaN where an age has no afterstate or no state with two moves)."""
    spec = SolveSpec.parse(board)
    T = board_tables(spec.rows, spec.cols)
    extra = {}
    if variants:
        for spawn in ("optimistic", "pessimistic"):
            extra[spawn] = best_values_by_age(cached_table(SolveSpec.parse(board, spawn=spawn), progress))
    rows = []
    with Table(cached_table(spec, progress)) as table:
        for c in tqdm(table.counts(), desc=f"{spec.board} by age", unit=" ages", disable=not progress):
            layer = table.layer(c.age, names=("states", "afterstates", "afterstate_values"))
            s = layer_statistics(
                layer["states"],
                layer["afterstates"],
                layer["afterstate_values"],
                spec.rows,
                spec.cols,
                T.moves,
                T.sym_lines,
                T.sym_bytes,
                spec.p4,
            )
            nan = float("nan")
            rows.append(
                {
                    "age": c.age,
                    "states": c.states,
                    "afterstates": c.afterstates,
                    "best_value": s[6] if c.afterstates else nan,
                    "best_value_optimistic": extra.get("optimistic", {}).get(c.age, nan),
                    "best_value_pessimistic": extra.get("pessimistic", {}).get(c.age, nan),
                    "terminal_afterstate_fraction": s[4] / c.afterstates if c.afterstates else nan,
                    "terminal_probability": s[5] / c.afterstates if c.afterstates else nan,
                    "mean_empty_cells": s[0] / c.states if c.states else nan,
                    "mean_gap": s[2] / s[1] if s[1] else nan,
                    "near_tie_fraction": s[3] / s[1] if s[1] else nan,
                }
            )
    return rows


def plot_solved_game(board: str, rows: list[dict], path) -> None:
    """The five panels of the module docstring in one figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    col = {k: np.array([r[k] for r in rows], float) for k in FIELDS}
    age = col["age"]
    fig, ax = plt.subplots(3, 2, figsize=(12, 10), sharex=True)
    a = ax[0, 0]
    a.semilogy(age, np.where(col["states"] > 0, col["states"], np.nan), lw=0.8, label="states")
    a.semilogy(age, np.where(col["afterstates"] > 0, col["afterstates"], np.nan), lw=0.8, label="afterstates")
    a.set_title("(after)states per age")
    a.legend()
    a = ax[0, 1]
    a.plot(age, col["best_value"], lw=0.9, color="purple", label="random spawn")
    if not np.all(np.isnan(col["best_value_optimistic"])):
        a.plot(age, col["best_value_optimistic"], ":", lw=0.9, color="tab:pink", label="optimistic spawn cell")
        a.plot(age, col["best_value_pessimistic"], "--", lw=0.9, color="tab:pink", label="pessimistic spawn cell")
    a.set_title("value of the best afterstate")
    a.legend()
    a = ax[1, 0]
    a.plot(age, col["terminal_afterstate_fraction"], lw=0.8, color="brown", label="a spawn can end the game")
    a.plot(age, col["terminal_probability"], lw=0.8, color="tab:orange", label="mean P(the spawn ends it)")
    a.plot(
        age,
        col["near_tie_fraction"],
        ":",
        lw=0.8,
        color="tab:blue",
        label=f"states whose 2 best moves differ < {NEAR_TIE:g}",
    )
    a.set_title("fraction of afterstates / states")
    a.set_ylim(0, 1.01)
    a.legend(fontsize=8)
    a = ax[1, 1]
    a.plot(age, col["mean_empty_cells"], lw=0.8, color="tab:green")
    a.set_title("mean empty cells of the states")
    a = ax[2, 0]
    a.plot(age, col["mean_gap"], lw=0.8, color="tab:red")
    a.set_title("mean gap: best minus the other legal moves")
    a.set_xlabel("age (sum of tiles)")
    ax[2, 1].axis("off")
    ax[2, 1].text(
        0.02,
        0.5,
        f"{board}: {int(col['states'].sum()):,} states,\n{int(col['afterstates'].sum()):,} "
        f"afterstates, {len(rows)} ages\n(solved by this project's solver)",
        fontsize=11,
    )
    for a in list(ax.flat)[:5]:
        for k in range(8, 16):  # mark the ages of the large tiles (256 and up)
            if age.size and 2**k <= age.max():
                a.axvline(2**k, color="0.8", lw=0.6, zorder=0)
    fig.suptitle(f"The solved {board} game by age")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="3x3", help="a board this machine solves: 2x2, 2x3, 3x2, 2x4, 4x2, 3x3")
    parser.add_argument("--out", default="results/figures")
    parser.add_argument("--no-variants", action="store_true", help="skip the optimistic/pessimistic tables")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    board = SolveSpec.parse(args.board).board
    rows = solved_game_by_age(board, variants=not args.no_variants, progress=not args.quiet)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{board}-by-age.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    plot_solved_game(board, rows, out / f"{board}-solved.png")
    print(f"wrote {out / f'{board}-solved.png'} and {out / f'{board}-by-age.csv'}")


if __name__ == "__main__":
    main()
