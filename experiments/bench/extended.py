"""Seed 003's tables ("Beyond 2048: AI models for extended 2048", Tables I-VI and VIII) beside ours: the share of
games whose largest tile is each value, and the mean score and turns, of a random player, of expectimax and of
n-tuple TD on 2x2 ... 6x6 boards.

    python -m experiments.bench.extended [--games 2x2:100000,3x3:100000,4x4:100000,5x5:20000,6x6:10000]
        [--expectimax-games 2x2:2000,3x3:2000,4x4:200,5x5:20,6x6:10] [--depth 3] [--depth-6x6 2]
        [--td-minutes 0] [--td-games 1000] [--td-dir results/extended-td] [--td-threads 0] [--seed 0]

Per board, three columns:

- **paper**: the paper's random agent (its tables; the number of games it played is not stated);
- **spawn**: ours under the paper's rule, ``invalid_action="spawn"``: a direction drawn among all four each turn,
  and a tile spawned after a move that changes nothing too;
- **legal**: ours with the v2 game's moves: a direction drawn among the legal ones (under ``"noop"`` an illegal
  move changes nothing and spawns nothing, so drawing among all four plays the same games).

Our shares carry their 95% Wilson interval.  A row is marked ``*`` where the paper's figure lies outside it
widened by the paper's rounding to 0.1 points.  The paper's own sampling error is unknown, as its number of
games is: per board, the bench prints the most games the paper could have played for every row to agree with
ours at 95% (each row's difference within 1.96 standard errors of a difference of two shares).  The games run on
:class:`env2048.Game2048VectorEnv`, each of its envs a fixed quota of games (stopping at a total count instead
would favour short games).

Expectimax: ours is :class:`agents.wide_expectimax.WideExpectimaxAgent` (the heuristic of
:mod:`agents.expectimax`, depth ``--depth``; ``--depth-6x6`` on 6x6, where a game lasts some 10^5 moves), beside
the paper's (its own heuristic and an iterative deepening search).  It never plays an illegal move, so the two
rules play the same games.  ``--expectimax-games 0`` (or a board left out) skips it.  ``--expectimax-leaf td``
values its leaves by the board's TD network (``--td-dir``, trained as below) in place of the heuristic.

n-tuple TD: ``--td-minutes 2x2:1,3x3:5,4x4:50,5x5:50`` trains a network per board for that many minutes
(``experiments.train.td``: the default tuples, the wall tuples beyond 16 cells, its learning-rate schedule, on
``--td-threads`` threads sharing the weights), saved to ``--td-dir``/``td-RxC.npz``; a board left out whose file
is there is played from the file (its training is read from the file's JSON summary).  Each network then plays
``--td-games`` greedy games without learning (the paper: 1,000 games after 100,000 games of training, 200,000
on 4x4 with eight tuples; no 6x6 figure).  Like expectimax, it never plays an illegal move.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

#: Seed 003, the random agent: percent of games whose largest tile is each value (Tables I-V).
PAPER_RANDOM = {
    (2, 2): {4: 39.1, 8: 46.1, 16: 14.7, 32: 0.1},
    (3, 3): {4: 0.1, 8: 6.2, 16: 37.0, 32: 48.9, 64: 7.7, 128: 0.1, 256: 0.0},
    (4, 4): {16: 0.5, 32: 10.6, 64: 44.3, 128: 39.4, 256: 5.2, 512: 0.0},
    (5, 5): {64: 0.9, 128: 7.7, 256: 35.2, 512: 47.6, 1024: 8.6, 2048: 0.0},
    (6, 6): {512: 0.4, 1024: 7.0, 2048: 28.1, 4096: 51.7, 8192: 12.8, 16384: 0.0},
}
#: Seed 003, the expectimax agent: percent of games whose largest tile is each value (Tables I-IV, VI).
PAPER_EXPECTIMAX = {
    (2, 2): {4: 30.1, 8: 9.9, 16: 59.2, 32: 0.8},
    (3, 3): {32: 1.0, 64: 26.3, 128: 60.0, 256: 12.7},
    (4, 4): {512: 2.0, 1024: 8.9, 2048: 46.7, 4096: 42.1, 8192: 0.3},
    (5, 5): {4096: 1.0, 8192: 5.0, 16384: 38.0, 32768: 55.0, 65536: 1.0},
    (6, 6): {65536: 17.1, 131072: 9.1, 262144: 54.5, 524288: 19.3},
}
#: Seed 003, the n-tuple TD agent: percent of games whose largest tile is each value (Tables I-IV).
PAPER_TD = {
    (2, 2): {4: 22.0, 8: 10.0, 16: 67.0, 32: 3.0},
    (3, 3): {32: 1.0, 64: 19.0, 128: 65.0, 256: 15.0},
    (4, 4): {512: 2.3, 1024: 6.6, 2048: 23.8, 4096: 66.4, 8192: 0.9},
    (5, 5): {4096: 1.0, 8192: 3.0, 16384: 31.0, 32768: 63.0, 65536: 2.0},
}
#: Seed 003, Table VIII: the random agent's average score and average number of moves, by board side.
PAPER_RANDOM_MEANS = {2: (20.668, 7.11), 3: (170.68, 33.206), 4: (960.136, 113.757), 5: (6023.824, 451.989),
                      6: (66793.524, 3184.35)}  # fmt: skip
DEFAULT_GAMES = "2x2:100000,3x3:100000,4x4:100000,5x5:20000,6x6:10000"
DEFAULT_EXPECTIMAX_GAMES = "2x2:2000,3x3:2000,4x4:200,5x5:20,6x6:10"
#: Training games per round of TD by board (the learning rate changes between rounds; a round ends the budget).
TD_ROUND = {(2, 2): 2000, (3, 3): 2000, (4, 4): 200, (5, 5): 20, (6, 6): 4}
#: Envs stepped at once.
ENVS = 500


def play_random(rows: int, cols: int, games: int, rule: str, seed: int) -> dict:
    """``games`` games of a random player: ``rule`` ``"spawn"`` (directions among all four, seed 003's rule) or
    ``"legal"`` (among the legal ones, the v2 moves).  Returns ``{"max_tile": int64 (games,), "score": float64
    (games,), "turns": int64 (games,)}``: each game's largest tile, score and turns (illegal ones included)."""
    from env2048 import Game2048VectorEnv
    from env2048.engine import sample_legal_actions

    n = min(ENVS, games)
    quota = np.full(n, games // n) + (np.arange(n) < games % n)
    env = Game2048VectorEnv(n, rows, cols, invalid_action="spawn" if rule == "spawn" else "noop")
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    done = np.zeros(n, np.int64)
    out = {"max_tile": [], "score": [], "turns": []}
    while (done < quota).any():
        if rule == "spawn":
            actions = rng.integers(0, 4, n)
        else:
            actions = sample_legal_actions(info["action_mask"], rng.random(n))
        _, _, terminated, truncated, info = env.step(actions)
        if truncated.any():
            raise RuntimeError("a game reached the env's time limit: a random game should end long before")
        for i in np.flatnonzero(terminated & (done < quota)):
            out["max_tile"].append(int(info["max_tile"][i]))
            out["score"].append(float(info["score"][i]))
            out["turns"].append(int(info["moves"][i] + info["illegal_moves"][i]))
        done += terminated
    return {key: np.asarray(values) for key, values in out.items()}


def play_expectimax(rows: int, cols: int, games: int, depth: int, seed: int, evaluator="heuristic") -> dict:
    """``games`` games of :class:`agents.wide_expectimax.WideExpectimaxAgent` at ``depth`` (leaves valued by
    ``evaluator``: the heuristic or an n-tuple network), all at once on a vector env (each env plays one game; one
    that has finished idles).  Returns ``{"max_tile", "score", "turns"}`` as :func:`play_random`."""
    from tqdm.auto import tqdm

    from agents.wide_expectimax import WideExpectimaxAgent
    from env2048 import Game2048VectorEnv

    env = Game2048VectorEnv(games, rows, cols)
    agent = WideExpectimaxAgent(rows, cols, depth, evaluator=evaluator)
    obs, info = env.reset(seed=seed)
    playing = np.ones(games, bool)
    out = {key: np.zeros(games, dtype) for key, dtype in (("max_tile", np.int64), ("score", float), ("turns", int))}
    bar = tqdm(total=games, desc=f"expectimax {rows}x{cols}", unit=" games", mininterval=30)
    moves = 0
    while playing.any():
        actions = np.zeros(games, np.int64)
        actions[playing] = agent.act_batch(obs[playing], info["action_mask"][playing])
        obs, _, terminated, _, info = env.step(actions)
        moves += int(playing.sum())
        for i in np.flatnonzero(terminated & playing):
            out["max_tile"][i], out["score"][i], out["turns"][i] = (
                info["max_tile"][i],
                info["score"][i],
                info["moves"][i],
            )
            playing[i] = False
            bar.update(1)
        if moves % 100_000 < playing.sum():
            bar.set_postfix(moves=f"{moves:,}", largest=int(info["max_tile"][playing].max(initial=0)))
    bar.close()
    return out


def td_network(rows: int, cols: int, minutes: float, directory, threads: int, seed: int):
    """The TD network of a board and its training summary: trained for ``minutes`` (> 0) and saved to
    ``directory/td-RxC.npz``, or (``minutes`` 0) loaded from there.  Returns ``(agent, summary dict)``."""
    import json
    from pathlib import Path

    from agents.ntuple import NTupleAgent
    from experiments.train import td as train_td

    path = Path(directory) / f"td-{rows}x{cols}.npz"
    if minutes > 0:
        args = train_td.Args(
            board=f"{rows}x{cols}", minutes=minutes, seed=seed, threads=threads, round=TD_ROUND[rows, cols],
            evaluate=False, test_games=0, checkpoint_minutes=5.0, out=str(path),
        )  # fmt: skip
        summary = train_td.train(args)
    elif path.is_file():
        summary = json.loads(path.with_suffix(".json").read_text())
    else:
        raise SystemExit(f"--td-minutes: no {rows}x{cols} budget given and no trained network at {path}")
    return NTupleAgent.load(path), summary


def play_td(agent, games: int, threads: int) -> tuple[np.ndarray, float]:
    """Play ``games`` greedy games without learning: ``(largest tile of each game int64 (games,), mean score)``
    (the games in order of their largest tile)."""
    stats = agent.train(games, learn=False, threads=threads)
    reached = stats.max_exponent_counts  # tile -> games whose largest tile is at least it
    ordered = sorted(reached)
    counts = [reached[t] - (reached[ordered[k + 1]] if k + 1 < len(ordered) else 0) for k, t in enumerate(ordered)]
    return np.repeat(np.array(ordered, np.int64), counts), stats.mean_score


def print_beside_paper(paper: dict[int, float], max_tiles: np.ndarray, ours_name: str) -> None:
    """A table of the paper's shares beside ours (95% interval) per largest tile, then the shares of games that
    reached each tile or a larger one (the paper's summed from its rows)."""
    tiles = sorted(set(paper) | set(np.unique(max_tiles).tolist()))
    ours, ours_reached = shares(max_tiles, tiles), shares(max_tiles, tiles, at_least=True)
    print(f"| largest tile | paper | {ours_name} | paper: reached | {ours_name}: reached |\n|---:|---:|---:|---:|---:|")
    for tile in tiles:
        paper_reached = f"{sum(v for t, v in paper.items() if t >= tile):.1f}" if paper else "—"
        cells = [f"{s[tile][0]:.1f} [{s[tile][1]:.1f}, {s[tile][2]:.1f}]" for s in (ours, ours_reached)]
        print(f"| {tile} | {paper.get(tile, '—')} | {cells[0]} | {paper_reached} | {cells[1]} |")


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion, ``(low, high)`` in [0, 1]."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def shares(max_tiles: np.ndarray, tiles, at_least: bool = False) -> dict[int, tuple[float, float, float]]:
    """Per tile value: (percent of games whose largest tile it is, or with ``at_least`` is it or larger; 95%
    interval low, high), in percent."""
    n = len(max_tiles)
    result = {}
    for tile in tiles:
        k = int((max_tiles >= tile).sum() if at_least else (max_tiles == tile).sum())
        low, high = wilson(k, n)
        result[tile] = (100 * k / n, 100 * low, 100 * high)
    return result


def paper_games_bound(paper: dict[int, float], ours: dict[int, tuple[float, float, float]], n: int) -> float:
    """The most games the paper could have played for each of its rows to lie within 1.96 standard errors of the
    difference from ours (``n`` games), after its rounding to 0.1 points; ``inf`` if our games' own error covers
    every row's difference."""
    bound = math.inf
    for tile, percent in paper.items():
        share, gap = percent / 100, max(0.0, abs(percent - ours[tile][0]) - 0.05) / 100
        spread = share * (1 - share)
        if gap == 0 or spread == 0:
            continue
        room = (gap / 1.96) ** 2 - (ours[tile][0] / 100) * (1 - ours[tile][0] / 100) / n
        if room > 0:  # else our share's own error covers the difference, whatever the paper's games
            bound = min(bound, spread / room)
    return bound


def parse_shape(text: str, option: str) -> tuple[int, int]:
    """``"3x3"`` as ``(3, 3)``: one of the paper's boards, else a clear exit."""
    from env2048.shape import parse_board

    try:
        shape = parse_board(text)
    except ValueError as err:
        raise SystemExit(f"{option}: {err}") from None
    if shape not in PAPER_RANDOM:
        raise SystemExit(f"{option}: boards are {', '.join(f'{r}x{c}' for r, c in PAPER_RANDOM)}, got {text!r}")
    return shape


def parse_games(text: str, option: str = "--games", kind=int) -> dict[tuple[int, int], int]:
    """``"3x3:20000,4x4:100"`` as ``{(3, 3): 20000, (4, 4): 100}`` (counts of ``kind``, > 0); ``"0"``: none."""
    games = {}
    if text.strip() == "0":
        return games
    for item in text.split(","):
        shape, _, count = item.partition(":")
        try:
            value = kind(count)
        except ValueError:
            raise SystemExit(f"{option}: expected items like 3x3:20000, got {item!r}") from None
        if value <= 0:
            raise SystemExit(f"{option}: counts must be > 0, got {item!r}")
        games[parse_shape(shape, option)] = value
    return games


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", default=DEFAULT_GAMES, help="board:games, comma-separated (default %(default)s)")
    p.add_argument("--expectimax-games", default=DEFAULT_EXPECTIMAX_GAMES, help="board:games (default %(default)s)")
    p.add_argument("--depth", type=int, default=3, help="expectimax's depth (default %(default)s)")
    p.add_argument("--depth-6x6", type=int, default=2, help="expectimax's depth on 6x6 (default %(default)s)")
    p.add_argument(
        "--expectimax-leaf",
        choices=("heuristic", "td"),
        default="heuristic",
        help="expectimax's leaf values: the heuristic, or the board's TD network from --td-dir",
    )
    p.add_argument("--td-minutes", default="0", help="board:minutes of TD training, comma-separated (0: none)")
    p.add_argument("--td-games", type=int, default=1000, help="greedy games per TD network (default %(default)s)")
    p.add_argument("--td-dir", default="results/extended-td", help="where the TD networks are saved and read")
    p.add_argument("--td-threads", type=int, default=0, help="threads of TD training and play (0: all cores)")
    p.add_argument("--td-boards", default="", help="boards whose saved TD networks play without training")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    expectimax_games = parse_games(args.expectimax_games, "--expectimax-games")
    td_minutes = parse_games(args.td_minutes, "--td-minutes", float)
    for item in filter(None, args.td_boards.split(",")):
        td_minutes.setdefault(parse_shape(item, "--td-boards"), 0.0)
    outside = compared = 0
    for (rows, cols), games in parse_games(args.games).items():
        start = time.perf_counter()
        played = {rule: play_random(rows, cols, games, rule, args.seed) for rule in ("spawn", "legal")}
        seconds = time.perf_counter() - start
        paper = PAPER_RANDOM[(rows, cols)]
        tiles = sorted(set(paper) | set(np.unique(played["spawn"]["max_tile"]).tolist()))
        ours = {rule: shares(played[rule]["max_tile"], tiles) for rule in played}
        print(f"\n{rows}x{cols}, random player, {games:,} games per rule ({seconds:.0f} s)\n")
        print("| largest tile | paper | spawn (paper's rule) | legal (v2 moves) |")
        print("|---:|---:|---:|---:|")
        for tile in tiles:
            cells = [f"{ours[r][tile][0]:.1f} [{ours[r][tile][1]:.1f}, {ours[r][tile][2]:.1f}]" for r in played]
            mark = ""
            if tile in paper:
                compared += 1
                share, low, high = ours["spawn"][tile]
                if not low - 0.05 <= paper[tile] <= high + 0.05:
                    mark, outside = " *", outside + 1
            print(f"| {tile} | {paper.get(tile, '—')}{mark} | " + " | ".join(cells) + " |")
        bound = paper_games_bound(paper, ours["spawn"], games)
        print(f"every row agrees at 95% if the paper played at most {bound:,.0f} games on this board")
        score, turns = PAPER_RANDOM_MEANS[rows] if rows == cols else (None, None)
        for rule in played:
            mean_score = played[rule]["score"].mean()
            mean_turns = played[rule]["turns"].mean()
            print(f"{rule}: mean score {mean_score:,.1f}, mean turns {mean_turns:,.1f}", end="")
            print(f" (paper: {score:,.1f} and {turns:,.1f})" if score is not None and rule == "spawn" else "")
    print(
        f"\nthe paper's figure outside our 95% interval (spawn rule, widened by its rounding): {outside} of "
        f"{compared} rows (about {0.05 * compared:.1f} would be by chance alone)"
    )
    for (rows, cols), games in expectimax_games.items():
        depth = args.depth_6x6 if (rows, cols) == (6, 6) else args.depth
        start = time.perf_counter()
        evaluator, name = "heuristic", f"expectimax:{depth}"
        if args.expectimax_leaf == "td":
            evaluator, name = td_network(rows, cols, 0, args.td_dir, 1, args.seed)[0], f"expectimax:{depth}:td"
        played = play_expectimax(rows, cols, games, depth, args.seed, evaluator)
        seconds = time.perf_counter() - start
        print(f"\n{rows}x{cols}, {name}, {games:,} games ({seconds:.0f} s)\n")
        print_beside_paper(PAPER_EXPECTIMAX[(rows, cols)], played["max_tile"], f"ours, {name}")
        print(f"mean score {played['score'].mean():,.1f}, mean moves {played['turns'].mean():,.1f}")
    threads = args.td_threads or os.cpu_count() or 1
    for (rows, cols), minutes in td_minutes.items():
        agent, summary = td_network(rows, cols, minutes, args.td_dir, threads, args.seed)
        start = time.perf_counter()
        max_tiles, mean_score = play_td(agent, args.td_games, threads)
        seconds = time.perf_counter() - start
        print(
            f"\n{rows}x{cols}, n-tuple TD: trained {summary['games']:,} games ({summary['moves']:,} moves, "
            f"{summary['train_seconds'] / 60:.1f} min on {summary['threads']} threads); {args.td_games:,} games "
            f"({seconds:.0f} s)\n"
        )
        print_beside_paper(PAPER_TD.get((rows, cols), {}), max_tiles, "ours, TD")
        print(f"mean score {mean_score:,.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
