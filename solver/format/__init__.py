"""The table format, in one place (``docs/table-format.md``): what a solved table is on disk, how to read and write it.

* :mod:`.table` opens a table of any version (:func:`Table`);
* :mod:`.v1` and :mod:`.v2` read and write each version;
* :mod:`.common` holds what every version shares (errors, checksums, root attributes, :class:`AgeCount`);
* format v2's codes: :mod:`.ranking` (board ranks within an age), :mod:`.elias_fano` (sets of ranks) and
  :mod:`.quantise` (values).

Nothing here imports the build; the build writes through these modules.  Reading a v2 table's *states* (not
stored: derived from the afterstates) uses the solver's Bellman step, imported when asked for.
"""

from __future__ import annotations

from .common import LAYER_DATASETS, SOLVER_VERSION, AgeCount, TableError, board_text, sha256_of
from .table import Table
from .v1 import TableV1, TableWriterV1
from .v2 import TableV2, TableWriterV2

__all__ = [
    "LAYER_DATASETS",
    "SOLVER_VERSION",
    "AgeCount",
    "Table",
    "TableError",
    "TableV1",
    "TableV2",
    "TableWriterV1",
    "TableWriterV2",
    "board_text",
    "sha256_of",
]
