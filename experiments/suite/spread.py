"""``run --address``: a run's cells (task x seed) spread over a Ray cluster, one Ray task per cell.

Each cell is computed on a worker exactly as one process computes it (:func:`experiments.suite.runner.
compute_cell`: the same seed, the same training and scoring), with the task's table built or found in that
machine's cache; the driver writes each cell's run file as it comes back, so the directory, and an interrupted
run's resumption, are those of a run in one process.  A cell whose worker dies is run again by Ray (up to
:data:`RETRIES` times); one that raises stops the run with the task and seed named, the finished cells kept.

Ray is the ``distributed`` extra; the session (private Ray on the loopback, or joining ``--address``) is the
solver's (:func:`solver.distributed.session.ray_session`).
"""

from __future__ import annotations

from pathlib import Path

#: Times Ray runs a cell again after its worker died.
RETRIES = 3


def _remote_cell(task, seed: int, agent, trainer, curve: int, hyperparams=None) -> tuple[dict, str]:
    """On a worker: ``(cell, table digest)`` of one cell (``hyperparams``: ``(values, sha256)`` or None)."""
    from oracle import Oracle

    from .policies import load_trainer
    from .runner import compute_cell_with
    from .tasks import checked_table

    train = load_trainer(trainer) if isinstance(trainer, str) else trainer
    table, digest = checked_table(task, progress=False)
    with Oracle.open(table) as oracle:
        return compute_cell_with(hyperparams, task, seed, agent, train, oracle, curve), digest


def run_cells_on_ray(
    out: Path, cells: list, agent, trainer, curve: int, address: str, progress: bool, hyperparams=None
) -> dict:
    """Compute the ``cells`` (``(task, seed)`` pairs without a run file) on the Ray cluster at ``address``
    (``"local"``: a private one on this machine) and write their run files; returns ``{task name: table digest}``
    of the tasks computed.  ``hyperparams``: ``{task name: (values, sha256)}`` of the files the trainer trains
    with (tasks left out: its own)."""
    hyperparams = hyperparams or {}
    from solver.distributed.session import ray_session

    from .runner import _cell, _failed, _report, _write_json

    digests: dict[str, str] = {}
    if not cells:
        return digests
    with ray_session(None if address == "local" else address) as ray:  # "local": a private Ray on the loopback
        remote = ray.remote(max_retries=RETRIES, num_cpus=1)(_remote_cell)
        pending = {
            remote.remote(task, seed, agent, trainer, curve, hyperparams.get(task.name)): (task, seed)
            for task, seed in cells
        }
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            task, seed = pending.pop(done[0])
            try:
                cell, digest = ray.get(done[0])
            except Exception as e:
                for ref in pending:
                    ray.cancel(ref)
                cause = getattr(e, "cause", None) or e
                raise _failed(out, task, seed, cause) from e
            digests[task.name] = digest
            _write_json(_cell(out, task, seed), cell)
            if progress:
                _report(cell)
    return digests
