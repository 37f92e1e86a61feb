"""The Solved2048 suite (docs/suite.md): a frozen, versioned task set scored against the exact optimum.

python -m experiments.suite tables                      # build every task's table (first use)
python -m experiments.suite run --agent greedy --seeds 5 --out runs/greedy
python -m experiments.suite run --trainer my.module:train --seeds 5 --out runs/mine
python -m experiments.suite compare runs/greedy runs/mine --out runs/compare
"""

from .tasks import SUITE_V1, SUITE_V2, SUITE_V3, SUITE_VERSION, Task, TaskError, get_task, suite_tasks

__all__ = ["SUITE_V1", "SUITE_V2", "SUITE_V3", "SUITE_VERSION", "Task", "TaskError", "get_task", "suite_tasks"]
