"""Replays: the recorded games and the data the viewer page is built from, checked against the oracle, an
independent solver and the game's rules; frames, the CLI and the benchmark's ``--replays``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from agents.registry import make_agent
from env2048 import board as B
from env2048.env import Game2048Env
from experiments import benchmark, replay
from experiments.replay.frames import annotated_frame, positions, write_gif, write_strip
from experiments.replay.viewer import page_data, render_page, write_replay_html
from oracle import Oracle, record_episodes, reenact
from oracle.episodes import chosen_episodes

from naive_solver import shared_solver


@pytest.fixture(scope="module")
def oracle_2x3():
    return Oracle.for_board("2x3", progress=False)


@pytest.fixture(scope="module")
def random_games(oracle_2x3):
    return record_episodes(make_agent("random", 2, 3, seed=5), range(5, 11), oracle=oracle_2x3, agent_name="random")


def page_json(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S)
    assert found, "the page has no inline data"
    return json.loads(found.group(1))


def test_moves_follow_the_rules(random_games):
    """Each recorded move is legal, its reward and afterstate are the game core's, and the next board is that
    afterstate plus one spawned 2 or 4 at the recorded cell; the game ends on a board with no legal move."""
    for game in random_games:
        assert game.moves > 0 and len(game.boards) == game.moves + 1
        for i in range(game.moves):
            sid = B.pack(game.boards[i])
            np.testing.assert_array_equal(game.legal[i], B.legal_actions(sid, 2, 3))
            assert game.legal[i, game.actions[i]]
            after, reward = B.move(sid, int(game.actions[i]), 2, 3)
            assert reward == game.rewards[i]
            after_grid = B.unpack(after, 2, 3).ravel()
            nxt = game.boards[i + 1].ravel()
            changed = np.flatnonzero(after_grid != nxt)
            assert changed.tolist() == [game.spawns[i]]
            assert after_grid[game.spawns[i]] == 0 and nxt[game.spawns[i]] in (1, 2)
        assert not B.legal_actions(B.pack(game.boards[-1]), 2, 3).any()
        assert game.scores[-1] == game.outcome == game.rewards.sum()


def test_q_values_and_optimal_moves_against_an_independent_solver(oracle_2x3, random_games):
    """Every move's Q-values equal the oracle's and the naive solver's; the marked optimal moves are the exact
    optimum's (up to the table's tie tolerance); the regret is max Q − Q(move), 0 for optimal moves."""
    ref = shared_solver(2, 3)
    rel, absolute = oracle_2x3.tie_tolerance
    checked_suboptimal = 0
    for game in random_games:
        for i in range(game.moves):
            q = game.q_values[i]
            np.testing.assert_array_equal(q, oracle_2x3.q_values(game.boards[i]))
            exact = np.array([np.nan if v is None else v for v in ref.q_values(tuple(map(tuple, game.boards[i])))])
            np.testing.assert_allclose(q, exact, rtol=1e-6, atol=1e-6, equal_nan=True)
            best = np.nanmax(exact)
            gap = best - exact
            slack = 2 * (rel * max(1.0, abs(best)) + absolute)
            marked = game.optimal[i]
            assert marked[gap <= 1e-9 * max(1.0, best)].all(), "an exactly optimal move is not marked"
            assert (gap[marked] <= slack).all(), "a marked move is not optimal"
            a = game.actions[i]
            want = 0.0 if marked[a] else np.nanmax(q) - q[a]
            assert game.regrets[i] == want
            checked_suboptimal += not marked[a]
    assert checked_suboptimal > 0, "the random games should contain suboptimal moves"


def test_optimal_agent_has_no_regret(oracle_2x3):
    games = record_episodes(make_agent("optimal", 2, 3, oracle=oracle_2x3), range(3), oracle=oracle_2x3)
    for game in games:
        assert game.optimal[np.arange(game.moves), game.actions].all()
        assert game.total_regret == 0.0


def test_episode_regret_sums_to_the_reports(oracle_2x3):
    """A benchmark game replayed from its recorded actions is the same game: its per-move regrets sum to the
    report's regret of that episode, and its outcome is the report's score."""
    report = oracle_2x3.regret(
        make_agent("greedy", 2, 3, seed=1), episodes=12, seed=40, progress=False, keep_actions=True
    )
    assert len(report.episode_actions) == 12
    assert report.mean_regret == pytest.approx(report.episode_regrets.mean(), rel=1e-12)
    assert report.moves == sum(len(a) for a in report.episode_actions)
    for i in range(12):
        game = reenact(report.episode_actions[i], report.seed + i, oracle_2x3, agent_name="greedy")
        assert game.total_regret == pytest.approx(report.episode_regrets[i], rel=1e-12, abs=1e-12)
        assert game.outcome == report.episode_scores[i]
    with pytest.raises(ValueError, match="recorded actions"):
        reenact(report.episode_actions[0][:-1], report.seed, oracle_2x3)


def test_page_data_is_the_recorded_game(oracle_2x3, random_games, tmp_path):
    path = write_replay_html(random_games, tmp_path / "r.html", title="t <b>", start_value=oracle_2x3.start_value)
    page = path.read_text()
    data = page_json(page)
    assert data == page_data(random_games, title="t <b>", start_value=oracle_2x3.start_value)
    assert "<title>t &lt;b&gt;</title>" in page
    assert re.search(r"\b(src|href)\s*=", page) is None, "the page must not load anything"
    for game, shown in zip(random_games, data["episodes"], strict=True):
        assert shown["moves"] == game.moves and len(shown["boards"]) == game.moves + 1
        assert shown["boards"][0] == game.boards[0].ravel().tolist()
        for i, q in enumerate(shown["q"]):
            want = oracle_2x3.q_values(np.array(shown["boards"][i]).reshape(2, 3))
            assert q == [None if np.isnan(v) else v for v in want]
            assert shown["optimal"][i] == oracle_2x3.optimal_mask(want).tolist()
        assert shown["cumulative_regret"][-1] == pytest.approx(game.total_regret)
        assert shown["cumulative_regret"][-1] == pytest.approx(sum(shown["regrets"]))
        assert shown["scores"][-1] == game.scores[-1]


def test_a_string_cannot_close_the_script(random_games):
    page = render_page(page_data(random_games[:1], labels=["</script><script>alert(1)</script>"]))
    assert page.count("</script>") == 2
    assert page_json(page)["episodes"][0]["label"] == "</script><script>alert(1)</script>"


@pytest.mark.parametrize(
    "board, agent, why", [("4x4", "greedy", "too large to solve here"), ("5x5", "random", "at most 16 cells")]
)
def test_boards_without_a_table_replay_without_q_values(tmp_path, board, agent, why):
    games = replay.replay(board, agent, seed=2, episodes=2, out=tmp_path / "r.html")
    data = page_json((tmp_path / "r.html").read_text())
    for game, shown in zip(games, data["episodes"], strict=True):
        assert game.q_values is None and why in game.note and shown["note"] == game.note
        assert shown["q"] is None and shown["regrets"] is None and shown["moves"] == game.moves > 0
    with pytest.raises(ValueError, match="needs the board's oracle"):
        replay.replay(board, "optimal", out=tmp_path / "x.html")


def test_frames_are_the_envs_rgb_array_with_annotations(random_games, tmp_path):
    game = random_games[0]
    env = Game2048Env(2, 3, render_mode="rgb_array")
    env.reset(seed=game.seed)
    picture = env.render()
    frame = annotated_frame(game, 0)
    np.testing.assert_array_equal(frame[: picture.shape[0], : picture.shape[1]], picture)
    assert frame.shape[0] > picture.shape[0]  # the annotation panel
    assert not np.array_equal(annotated_frame(game, 0), annotated_frame(game, game.moves))
    with pytest.raises(ValueError, match="position"):
        annotated_frame(game, game.moves + 1)
    gif = write_gif(game, tmp_path / "g.gif", fps=5)
    with Image.open(gif) as image:
        assert image.n_frames == game.moves + 1
    strip = write_strip(game, tmp_path / "s.png", frames=6, columns=3)
    with Image.open(strip) as image:
        h, w = frame.shape[:2]
        shown = len(positions(game, 6))
        assert image.size == (3 * w + 2 * 8, -(-shown // 3) * (h + 8) - 8)


def test_replay_cli(oracle_2x3, tmp_path, capsys):
    out = tmp_path / "replay.html"
    replay.main(
        [
            "--board",
            "2x3",
            "--agent",
            "greedy",
            "--episodes",
            "3",
            "--seed",
            "4",
            "--out",
            str(out),
            "--gif",
            str(tmp_path / "g.gif"),
            "--strip",
            str(tmp_path / "s.png"),
        ]
    )
    data = page_json(out.read_text())
    assert [e["seed"] for e in data["episodes"]] == [4, 5, 6]
    assert data["start_value"] == oracle_2x3.start_value
    assert (tmp_path / "g.gif").stat().st_size > 0 and (tmp_path / "s.png").stat().st_size > 0
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(ValueError, match="episodes must be >= 1"):
        replay.replay("2x3", "greedy", episodes=0, out=out)


def test_benchmark_writes_replays_of_the_worst_and_median_games(oracle_2x3, tmp_path):
    benchmark.run("2x3", ["greedy"], episodes=25, seed=3, out=tmp_path, progress=False, replays=2)
    data = page_json((tmp_path / "2x3" / "replay-greedy.html").read_text())
    report = oracle_2x3.regret(make_agent("greedy", 2, 3, seed=3), episodes=25, seed=3, progress=False)
    ranked = np.sort(report.episode_regrets)[::-1]
    shown = [e["total_regret"] for e in data["episodes"]]
    assert shown == pytest.approx([ranked[0], ranked[12]])
    assert data["episodes"][0]["label"].startswith("worst of 25")
    assert data["episodes"][1]["label"].startswith("median of 25")


@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=40), st.integers(1, 9))
def test_chosen_episodes(regrets, k):
    chosen = chosen_episodes(np.array(regrets), k)
    assert len(chosen) == len(set(chosen)) <= min(k, len(regrets))
    assert regrets[chosen[0]] == max(regrets)
    order = sorted(range(len(regrets)), key=lambda i: (-regrets[i], i))
    if k == 2 and (len(regrets) - 1) // 2 > 0:  # with 2 games the median rank is the worst
        assert chosen[1] == order[(len(regrets) - 1) // 2]
    if k >= 3:
        assert chosen[-1] == order[-1]


def test_chosen_episodes_rejects_zero():
    with pytest.raises(ValueError, match=">= 1"):
        chosen_episodes(np.zeros(3), 0)


def test_replay_of_a_capped_game_from_a_table_file(tmp_path):
    """A tile:K table given by path: the games stop at the goal tile and the Q-values are probabilities."""
    from solver.build import build
    from solver.spec import SolveSpec

    table = tmp_path / "2x3-tile5.h5"
    build(SolveSpec.parse("2x3", "tile:5"), table, progress=False)
    games = replay.replay("2x3", "random", seed=0, episodes=8, out=tmp_path / "r.html", table=table)
    assert {g.objective for g in games} == {"tile:5"}
    for game in games:
        made = game.boards[-1].max() >= 5
        assert game.outcome == float(made)
        legal = game.q_values[~np.isnan(game.q_values)]
        assert ((legal >= 0) & (legal <= 1 + 1e-9)).all()
    data = page_json((tmp_path / "r.html").read_text())
    assert data["episodes"][0]["objective"] == "tile:5"
