"""experiments.bench.extended: seed 003's random column beside ours, each rule played to its quota of games."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.bench.extended import main, play_expectimax, play_random, wilson


def test_each_rule_plays_exactly_its_games_and_records_how_each_ended():
    for rule in ("spawn", "legal"):
        got = play_random(2, 2, 37, rule, seed=1)
        assert {k: v.shape for k, v in got.items()} == {"max_tile": (37,), "score": (37,), "turns": (37,)}
        tiles = got["max_tile"]
        assert np.all(tiles >= 4) and np.all(tiles & (tiles - 1) == 0)  # a game ends with two tiles at least
        assert np.all(got["turns"] >= 1) and np.all(got["score"] >= 0)


def test_expectimax_plays_each_game_once_to_its_end():
    got = play_expectimax(3, 3, 5, depth=1, seed=2)
    assert got["max_tile"].shape == (5,) and np.all(got["max_tile"] >= 16) and np.all(got["turns"] > 5)


def test_the_wilson_interval_holds_the_share_and_stays_in_bounds():
    assert wilson(0, 10)[0] == 0.0 and 0 < wilson(0, 10)[1] < 0.35
    low, high = wilson(5, 10)
    assert low < 0.5 < high and low == pytest.approx(1 - high)
    assert wilson(10, 10)[1] == 1.0


def test_the_tables_print_the_papers_columns_beside_ours(capsys):
    assert main(["--games", "2x2:60", "--expectimax-games", "2x2:12,5x5:1", "--depth", "1"]) == 0
    out = capsys.readouterr().out
    assert "| 8 | 46.1" in out and "spawn: mean score" in out and "(paper: 20.7 and 7.1)" in out
    assert "2x2, expectimax:1, 12 games" in out and "| 32768 | 55.0 |" in out
    with pytest.raises(SystemExit, match="boards are"):
        main(["--games", "7x7:10"])


def test_td_trains_saves_and_replays_its_network_with_shares_that_add_up(tmp_path, capsys):
    """A 2x2 network trains for its budget and plays its games; a second call without a budget plays the saved
    network (``--td-boards``) and reads its training from the summary; the shares of largest tiles are the
    games counted once each."""
    td = ["--games", "0", "--expectimax-games", "0", "--td-games", "300", "--td-dir", str(tmp_path)]
    assert main([*td, "--td-minutes", "2x2:0.02", "--td-threads", "1"]) == 0
    first = capsys.readouterr().out
    assert (tmp_path / "td-2x2.npz").is_file()
    assert main([*td, "--td-boards", "2x2", "--td-threads", "2"]) == 0
    second = capsys.readouterr().out
    trained = [line for line in first.splitlines() if line.startswith("2x2, n-tuple TD: trained")]
    assert trained and trained[0].split(";")[0] in second
    from agents.ntuple import NTupleAgent
    from experiments.bench.extended import play_td, shares

    max_tiles, mean_score = play_td(NTupleAgent.load(tmp_path / "td-2x2.npz"), 500, 1)
    assert max_tiles.shape == (500,) and np.all(max_tiles & (max_tiles - 1) == 0) and mean_score > 0
    tiles = [4, 8, 16, 32, 64]
    ours, reached = shares(max_tiles, tiles), shares(max_tiles, tiles, at_least=True)
    assert sum(share for share, _, _ in ours.values()) == pytest.approx(100.0)
    assert reached[4][0] == 100.0 and all(reached[t][0] == pytest.approx(sum(ours[u][0] for u in tiles if u >= t))
                                          for t in tiles)  # fmt: skip
    assert "| 16 | 67.0 |" in first and "| 32 | 3.0 |" in first and "paper: reached" in first
    with pytest.raises(SystemExit, match="no trained network"):
        main([*td, "--td-boards", "3x3"])
    leaf = ["--games", "0", "--expectimax-games", "2x2:6", "--depth", "1", "--expectimax-leaf", "td"]
    assert main([*leaf, "--td-dir", str(tmp_path)]) == 0
    assert "2x2, expectimax:1:td, 6 games" in capsys.readouterr().out
