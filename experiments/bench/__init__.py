"""Speed benchmarks: each prints figures (docs name the command of each)."""
