"""``convert``: a v1 table (every state and afterstate, float64 values) -> a v2 table (coded afterstates)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .format import Table, quantise
from .format.common import TableError, table_bytes
from .format.v2 import CodedLayer, TableWriterV2, encode_boards


def convert_table(src: str | os.PathLike, out: str | os.PathLike, layout: str = "file", progress: bool = True) -> dict:
    """Write ``src``'s afterstates and values as a v2 table at ``out``; returns sizes and the largest value
    errors introduced (relative and absolute), which are within the value code's bound."""
    src, out = Path(src), Path(out)
    with Table(src) as t:
        if t.format_version != 1:
            raise TableError(f"{src} is already format {t.format_version}; convert reads v1 tables")
        spec = t.spec
        ids, probs, _ = t.start()
        writer = TableWriterV2(out, spec, ids, probs, layout)
        code = quantise.value_code_for(spec.objective)
        worst_rel = worst_abs = 0.0
        try:
            for c in tqdm(t.counts(), desc=f"convert {spec.board}", unit=" ages", disable=not progress):
                layer = t.layer(c.age)
                upper, lower, low_bits = encode_boards(c.age, layer["afterstates"], spec)
                coded = CodedLayer.encode(c, spec, upper, lower, low_bits, layer["afterstate_values"], code)
                back = coded.afterstate_values()
                err = np.abs(back - layer["afterstate_values"])
                if err.size:
                    worst_abs = max(worst_abs, float(err.max()))
                    nz = layer["afterstate_values"] != 0
                    if nz.any():
                        worst_rel = max(worst_rel, float((err[nz] / layer["afterstate_values"][nz]).max()))
                writer.write_age(coded, layer["states"], layer["state_values"])
            writer.finish(t.counts())
        except BaseException:
            writer.abort()
            raise
    return {
        "src_bytes": table_bytes(src),
        "out_bytes": table_bytes(out),
        "max_relative_error": worst_rel,
        "max_absolute_error": worst_abs,
    }
