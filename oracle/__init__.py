"""oracle package (see README)."""
