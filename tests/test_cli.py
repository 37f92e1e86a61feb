"""The dataclass command lines of experiments/ (experiments.cli, through tyro)."""

from __future__ import annotations

import pytest

from experiments.cli import parse_dataclass
from experiments.train import td


def test_flags_types_and_booleans_reach_the_dataclass():
    args = parse_dataclass(
        td.Args, ["--board", "2x3", "--minutes", "0.5", "--no-evaluate", "--stage-shift", "2", "--schedule", "", "--tc"]
    )
    assert (args.board, args.minutes, args.evaluate, args.stage_shift, args.schedule, args.tc) == (
        "2x3",
        0.5,
        False,
        2,
        "",
        True,
    )
    assert args.games == td.Args.games and args.out == td.Args.out  # untouched fields keep their defaults


def test_help_lists_each_field_with_its_type_default_and_comment(capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_dataclass(td.Args, ["--help"], description=td.__doc__)
    assert exit_.value.code == 0
    # the help wraps its lines in a box at any width: compare with the borders dropped and spaces collapsed
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "python -m experiments.train.td" in text
    assert "--threads INT" in text and '("Hogwild")' in text  # the field's comment is its help
    assert "--eval-episodes INT regret games per checkpoint (method regret) (default: 300)" in text


@pytest.mark.parametrize("argv", [["--minutes", "ten"], ["--warp-drive", "1"], ["--games"]])
def test_a_bad_flag_or_value_exits_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_dataclass(td.Args, argv)
    assert exit_.value.code == 2
    assert "--help" in capsys.readouterr().err


def test_a_value_that_starts_with_a_dash_but_holds_a_space_stays_a_value():
    """As with argparse: ``--extra "--net 256,256"`` (docs/diagnostics.md) passes the flags through."""
    from experiments.train import sweep_ppo

    args = parse_dataclass(sweep_ppo.Args, ["--extra", "--net 256,256 --n-envs 8", "--jobs", "1"])
    assert (args.extra, args.jobs) == ("--net 256,256 --n-envs 8", 1)
