"""Replay an agent's games move by move beside the optimum: a self-contained HTML viewer, and GIF / PNG frames.

    python -m experiments.replay --board 3x3 --agent greedy --out replay.html
    python -m experiments.replay --board 3x3 --agent expectimax:2 --episodes 5 --seed 10 --gif game.gif

Agents as in the benchmark (``random``, ``greedy``, ``optimal``, ``expectimax:D[:PATH]``, ``td:PATH``,
``ppo:PATH``, ``package.module:factory``).  Episode i is reset with seed ``seed + i``, as in the benchmark, so a
replay shows exactly the benchmark's game of that seed.  The 3x3 table builds into the cache on first use; boards
without a table (4x4, 4x3 without ``--table``, ...) are replayed without Q-values and the page says why.  The
table of an endgame pattern replays that pattern's games (``--board`` is then the table's)::

    python -m experiments.replay --table TABLES/L3-512 --agent td:td-4x4.npz --episodes 3
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents.registry import USAGE, make_agent
from env2048.env import Game2048Env
from env2048.shape import MAX_PACKED_CELLS, parse_board
from oracle import Oracle
from oracle.priced_games import record_episodes
from oracle.wrapper import shared_oracle

from .frames import write_gif, write_strip
from .viewer import write_replay_html


def oracle_or_reason(board: str, objective: str = "score", p4: float = 0.1, table=None):
    """``(oracle, "")`` for a board with a table (given, cached, or built here on first use), else
    ``(None, why)``.  A ``table`` given by path must open: its errors are raised, not turned into a reason."""
    rows, cols = parse_board(board)
    if table is not None:
        return shared_oracle(f"{rows}x{cols}", p4, table=table, objective=objective), ""
    if rows * cols > MAX_PACKED_CELLS:
        return None, (
            f"a {rows}x{cols} board has {rows * cols} cells; the solver and the oracle handle boards of "
            f"at most {MAX_PACKED_CELLS} cells, so no table exists"
        )
    try:
        return shared_oracle(f"{rows}x{cols}", p4, objective=objective), ""
    except FileNotFoundError as err:
        return None, str(err)


def episode_label(spec: str, episode) -> str:
    """The episode list's entry: agent, seed, moves, outcome and total regret."""
    outcome = (
        f"score {int(episode.scores[-1]):,}"
        if episode.objective == "score"
        else ("goal made" if episode.outcome >= 1 else "goal missed")
    )
    regret = "" if episode.regrets is None else f", regret {episode.total_regret:.2f}"
    return f"{spec}, seed {episode.seed}: {episode.moves} moves, {outcome}{regret}"


def table_board(table) -> str:
    """The board (``"RxC"``) a solved table is for."""
    oracle = Oracle.open(table)
    try:
        return oracle.spec.board
    finally:
        oracle.close()


def replay(
    board: str | None,
    agent_spec: str,
    seed: int = 0,
    episodes: int = 1,
    out="replay.html",
    table=None,
    objective: str = "score",
    p4: float = 0.1,
    gif=None,
    strip=None,
    fps: float = 4.0,
):
    """Play ``episodes`` games of ``agent_spec`` (seeds ``seed``, ``seed + 1``, ...) and write the viewer page to
    ``out`` (and the first game as a GIF / PNG strip).  Returns the list of :class:`~oracle.episodes.Episode`.
    ``board`` None: the ``table``'s board (3x3 without a table).  A table of an endgame pattern replays the
    pattern's game, its fixed tiles and target cells marked."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if board is None:
        board = "3x3" if table is None else table_board(table)
    rows, cols = parse_board(board)
    oracle, why = oracle_or_reason(board, objective, p4, table)
    agent = make_agent(agent_spec, rows, cols, seed=seed, oracle=oracle)
    seeds = range(seed, seed + episodes)
    if oracle is not None:
        played = record_episodes(agent, seeds, oracle=oracle, agent_name=agent_spec)
    else:
        goal = None if objective == "score" else _goal_tile(objective)
        env = Game2048Env(rows, cols, p4=p4, goal_tile=goal, invalid_action="raise")
        played = record_episodes(agent, seeds, env=env, agent_name=agent_spec, note=why)
    labels = [episode_label(agent_spec, e) for e in played]
    start_value = oracle.start_value if oracle is not None else None
    if oracle is not None and oracle.spec.pattern is not None:
        title = f"{oracle.spec.pattern.describe()}: {agent_spec}"
    else:
        title = f"{rows}x{cols} {objective if oracle is None else oracle.spec.objective}: {agent_spec}"
    write_replay_html(played, out, labels, title=title, start_value=start_value)
    if gif:
        write_gif(played[0], gif, fps=fps)
    if strip:
        write_strip(played[0], strip)
    return played


def _goal_tile(objective: str) -> int:
    name, _, k = objective.partition(":")
    if name != "tile" or not k.isdigit():
        raise ValueError(f"objective must be 'score' or 'tile:K', got {objective!r}")
    return 1 << int(k)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--board",
        default=None,
        help="RxC (default: the --table's board, else 3x3); boards with a table get Q-values and regret",
    )
    parser.add_argument("--agent", required=True, help=USAGE)
    parser.add_argument("--seed", type=int, default=0, help="episode i is reset with seed SEED + i")
    parser.add_argument("--episodes", type=int, default=1, help="games on the page (selectable)")
    parser.add_argument("--out", default="replay.html", help="the HTML page to write")
    parser.add_argument("--table", default=None, help="solved table (file or directory; default: the cache)")
    parser.add_argument("--objective", default="score", help="score (default) or tile:K")
    parser.add_argument("--p4", type=float, default=0.1, help="probability of a spawned 4 (default 0.1)")
    parser.add_argument("--gif", default=None, help="also write the first game as an animated GIF")
    parser.add_argument("--strip", default=None, help="also write the first game as a PNG strip of 12 frames")
    parser.add_argument("--fps", type=float, default=4.0, help="GIF frames per second (default 4)")
    args = parser.parse_args(argv)
    played = replay(
        args.board,
        args.agent,
        args.seed,
        args.episodes,
        args.out,
        args.table,
        args.objective,
        args.p4,
        args.gif,
        args.strip,
        args.fps,
    )
    for e in played:
        print(episode_label(args.agent, e))
    if played[0].note:
        print(f"no Q-values: {played[0].note}")
    written = [args.out] + [p for p in (args.gif, args.strip) if p]
    print("wrote " + ", ".join(str(Path(p)) for p in written))


if __name__ == "__main__":
    main()
