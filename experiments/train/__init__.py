"""Training scripts: TD, PPO, a PPO sweep, imitation of the optimum."""
