"""Text and image renderings of an exponent board; no window, no GUI library."""

from __future__ import annotations

import numpy as np

TILE_PX = 64
GAP_PX = 6

_BACKGROUND = (0xBB, 0xAD, 0xA0)
_EMPTY = (0xCD, 0xC1, 0xB4)
# The usual 2048 palette, by exponent (2 -> 1, ..., 2048 -> 11); bigger tiles share the last colour.
_TILE = [
    (0xEE, 0xE4, 0xDA),
    (0xED, 0xE0, 0xC8),
    (0xF2, 0xB1, 0x79),
    (0xF5, 0x95, 0x63),
    (0xF6, 0x7C, 0x5F),
    (0xF6, 0x5E, 0x3B),
    (0xED, 0xCF, 0x72),
    (0xED, 0xCC, 0x61),
    (0xED, 0xC8, 0x50),
    (0xED, 0xC5, 0x3F),
    (0xED, 0xC2, 0x2E),
    (0x3C, 0x3A, 0x32),
]
_DARK_TEXT = (0x77, 0x6E, 0x65)
_LIGHT_TEXT = (0xF9, 0xF6, 0xF2)

# 3x5 pixel digits ("#" = ink).
_GLYPHS = {
    "0": ["###", "# #", "# #", "# #", "###"],
    "1": [" # ", "## ", " # ", " # ", "###"],
    "2": ["###", "  #", "###", "#  ", "###"],
    "3": ["###", "  #", "###", "  #", "###"],
    "4": ["# #", "# #", "###", "  #", "  #"],
    "5": ["###", "#  ", "###", "  #", "###"],
    "6": ["###", "#  ", "###", "# #", "###"],
    "7": ["###", "  #", "  #", "  #", "  #"],
    "8": ["###", "# #", "###", "# #", "###"],
    "9": ["###", "# #", "###", "  #", "###"],
}
_GLYPH_BITS = {d: np.array([[ch == "#" for ch in row] for row in rows], dtype=bool) for d, rows in _GLYPHS.items()}


def palette_hex() -> dict:
    """The colours of :func:`render_rgb` as CSS hex strings, for other renderers (the HTML replay viewer):
    ``background``, ``empty``, ``tiles`` (by exponent 1, 2, ...; bigger tiles share the last), ``dark_text``
    (tiles 2 and 4) and ``light_text``."""

    def css(rgb):
        return "#" + "".join(f"{v:02x}" for v in rgb)

    return {
        "background": css(_BACKGROUND),
        "empty": css(_EMPTY),
        "tiles": [css(c) for c in _TILE],
        "dark_text": css(_DARK_TEXT),
        "light_text": css(_LIGHT_TEXT),
    }


def render_ansi(board: np.ndarray) -> str:
    """Text grid of tile values (``.`` for empty), one row per line.

    ``board``: exponents ``(rows, cols)``.
    """
    values = [["." if e == 0 else str(1 << int(e)) for e in row] for row in np.asarray(board)]
    width = max(len(v) for row in values for v in row)
    return "\n".join(" ".join(v.rjust(width) for v in row) for row in values) + "\n"


def _text_bitmap(text: str, scale: int) -> np.ndarray:
    glyphs = [_GLYPH_BITS[ch] for ch in text]
    spaced = []
    for i, g in enumerate(glyphs):
        spaced.append(g)
        if i < len(glyphs) - 1:
            spaced.append(np.zeros((5, 1), bool))
    bitmap = np.concatenate(spaced, axis=1)
    return np.kron(bitmap, np.ones((scale, scale), bool)).astype(bool)


def render_rgb(board: np.ndarray) -> np.ndarray:
    """Picture of the board: ``uint8 (H, W, 3)`` with H = rows*70+6, W = cols*70+6 (64 px tiles)."""
    board = np.asarray(board)
    rows, cols = board.shape
    height = rows * (TILE_PX + GAP_PX) + GAP_PX
    width = cols * (TILE_PX + GAP_PX) + GAP_PX
    img = np.empty((height, width, 3), np.uint8)
    img[:] = _BACKGROUND
    for r in range(rows):
        for c in range(cols):
            y0 = GAP_PX + r * (TILE_PX + GAP_PX)
            x0 = GAP_PX + c * (TILE_PX + GAP_PX)
            e = int(board[r, c])
            tile = img[y0 : y0 + TILE_PX, x0 : x0 + TILE_PX]
            if e == 0:
                tile[:] = _EMPTY
                continue
            tile[:] = _TILE[min(e, len(_TILE)) - 1]
            text = str(1 << e)
            units_wide = 4 * len(text) - 1
            scale = max(1, min((TILE_PX - 12) // units_wide, (TILE_PX - 12) // 5))
            bitmap = _text_bitmap(text, scale)
            th, tw = bitmap.shape
            ty, tx = (TILE_PX - th) // 2, (TILE_PX - tw) // 2
            ink = _DARK_TEXT if e <= 2 else _LIGHT_TEXT
            tile[ty : ty + th, tx : tx + tw][bitmap] = ink
    return img
