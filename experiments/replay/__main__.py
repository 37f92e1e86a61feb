"""``python -m experiments.replay``."""

from . import main

main()
