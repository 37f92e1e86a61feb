"""Learning diagnostics: exact learning curves, capacity ceilings, their plots."""
