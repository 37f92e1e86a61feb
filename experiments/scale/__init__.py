"""Projections of tables too large for this machine (4x3, the big endgame tables)."""
