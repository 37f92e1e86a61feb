"""Offline datasets (experiments.suite.dataset): written with Minari, loaded back by ``minari.load_dataset``, every
step's labels checked against the oracle, the exact reference scores, and the bad inputs.  The 2x4 task only
(its table builds in seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

minari = pytest.importorskip("minari")

from experiments.suite import get_task  # noqa: E402
from experiments.suite.__main__ import main as suite_main  # noqa: E402
from experiments.suite.dataset import DatasetError, load, make_dataset  # noqa: E402
from experiments.suite.tasks import ensure_table  # noqa: E402
from oracle import Oracle  # noqa: E402

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

IDENT = "solved2048/2x4/greedy-v0"
REGISTRY = Path(__file__).resolve().parents[1] / "docs" / "reference" / "suite-v1"


@pytest.fixture(scope="module")
def greedy_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("datasets")
    here = os.getcwd()
    os.chdir(root.parent)  # a relative --out, as `make datasets` gives
    try:
        make_dataset("2x4", "greedy", 4, root.name, progress=False)
    finally:
        os.chdir(here)
    return root


def test_minari_loads_it_and_every_step_carries_the_oracles_labels(greedy_dataset, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(greedy_dataset))
    data = minari.load_dataset(IDENT)
    assert data.total_episodes == 4
    with Oracle.open(ensure_table(get_task("2x4"), progress=False)) as oracle:
        checked = 0
        for episode in data.iterate_episodes():
            infos, obs, actions = episode.infos, episode.observations, episode.actions
            assert obs.shape == (len(actions) + 1, 2, 4) and infos["q_star"].shape == (len(actions) + 1, 4)
            assert np.isnan(infos["regret"][0])
            for t in range(len(obs)):
                q = oracle.q_values(obs[t])
                np.testing.assert_array_equal(infos["q_star"][t], q)
                np.testing.assert_array_equal(infos["action_mask"][t], ~np.isnan(q))
                if t < len(actions):
                    np.testing.assert_array_equal(infos["optimal_actions"][t], oracle.optimal_mask(q))
                    assert infos["regret"][t + 1] == pytest.approx(np.nanmax(q) - q[actions[t]])
                    checked += 1
            assert infos["score"][-1] == episode.rewards.sum()  # the return of a score task is the game's score
        assert checked == data.total_steps
        assert (np.concatenate([e.infos["regret"][1:] for e in data.iterate_episodes()]) > 0).any()  # greedy errs
        meta = data.storage.metadata
        assert meta["ref_max_score"] == oracle.start_value
        ours = json.loads(meta["solved2048"])
        assert ours["task"] == "2x4" and ours["table_digest"] == get_task("2x4").table_digest
    reference = json.loads((REGISTRY / "random.json").read_text())  # the suite's reference run of random play
    random_value = reference["value"][0][reference["tasks"].index("2x4")]
    assert meta["ref_min_score"] == pytest.approx(random_value, rel=1e-12) and ours["ref_min_method"] == "exact"
    returns = np.array([e.rewards.sum() for e in data.iterate_episodes()])
    np.testing.assert_allclose(
        minari.get_normalized_score(data, returns), (returns - random_value) / (oracle.start_value - random_value)
    )


def test_an_existing_id_is_refused_unless_overwritten(greedy_dataset, capsys):
    with pytest.raises(DatasetError, match="--overwrite"):
        make_dataset("2x4", "greedy", 2, greedy_dataset, progress=False)
    code = suite_main(
        [
            "dataset",
            "--task",
            "2x4",
            "--policy",
            "greedy",
            "--episodes",
            "2",
            "--out",
            str(greedy_dataset),
            "--overwrite",
            "--quiet",
        ]
    )
    assert code == 0 and load(IDENT, greedy_dataset).total_episodes == 2
    assert sorted(os.listdir(greedy_dataset / "solved2048" / "2x4")) == ["greedy-v0"]


def test_bad_input_gets_clear_errors_and_an_interrupted_write_leaves_nothing(tmp_path, capsys, monkeypatch):
    assert (
        suite_main(["dataset", "--task", "5x5", "--policy", "greedy", "--episodes", "1", "--out", str(tmp_path)]) == 2
    )
    assert "unknown task '5x5'" in capsys.readouterr().err
    with pytest.raises(DatasetError, match="--episodes must be"):
        make_dataset("2x4", "greedy", 0, tmp_path, progress=False)
    with pytest.raises(DatasetError, match="without a -vN"):
        make_dataset("2x4", "greedy", 1, tmp_path, name="mine-v2", progress=False)

    calls = []

    def breaks_on_the_50th_move(obs, info):
        calls.append(1)
        if len(calls) == 50:
            raise KeyboardInterrupt
        return int(np.flatnonzero(info["action_mask"])[0])

    import experiments.suite.dataset as dataset

    real = dataset.make_policy
    monkeypatch.setattr(
        dataset,
        "make_policy",
        lambda spec, *a, **k: real(breaks_on_the_50th_move if spec == "first" else spec, *a, **k),
    )
    with pytest.raises(KeyboardInterrupt):
        make_dataset("2x4", "first", 3, tmp_path, progress=False)
    assert len(calls) == 50 and not (tmp_path / "solved2048" / "2x4" / "first-v0").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".writing-")]


def test_behaviour_cloning_reads_the_taken_actions_and_scores_each_clone(greedy_dataset, tmp_path, monkeypatch):
    from experiments.suite.offline import run_bc, steps_of

    data = load(IDENT, greedy_dataset)
    steps = steps_of(data, 2)
    episodes = list(data.iterate_episodes(episode_indices=[0, 1]))
    assert len(steps) == sum(len(e.actions) for e in episodes)  # every 2x4 step has an allowed move
    np.testing.assert_array_equal(steps.optimal.argmax(axis=1), np.concatenate([e.actions for e in episodes]))
    assert (steps.optimal.sum(axis=1) == 1).all() and steps.legal[steps.optimal].all()
    rows = run_bc([IDENT], greedy_dataset, tmp_path, sizes=(2,), epochs=1)
    assert len(rows) == 1 and rows[0]["games"] == 2 and rows[0]["steps"] == len(steps)
    assert rows[0]["method"] == "exact" and 0 < rows[0]["normalized"] < 1
    assert json.loads((tmp_path / "bc.json").read_text()) == rows and (tmp_path / "bc.png").stat().st_size > 0
    with monkeypatch.context() as m:  # run again (as after an interruption): the clone already scored is kept
        m.setattr("experiments.suite.offline.fit_policy_net", lambda *a, **k: pytest.fail("trained again"))
        assert run_bc([IDENT], greedy_dataset, tmp_path, sizes=(2,), epochs=1) == rows
    with pytest.raises(DatasetError, match=f"holds {data.total_episodes} games"):
        run_bc([IDENT], greedy_dataset, tmp_path, sizes=(data.total_episodes + 1,))
