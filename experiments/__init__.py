"""experiments package (see README)."""
