"""solver package (see README)."""
