"""An episode as pictures for slides and papers: annotated frames, an animated GIF, a PNG strip.

Each frame is the env's ``render_mode="rgb_array"`` picture of the board (:func:`env2048.render.render_rgb`) over a
panel with the move's annotations: the four moves' Q-values as bars (illegal ones greyed, optimal ones green),
the agent's move marked ``>``, its regret, and the running score, cumulative regret and age.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from env2048.render import render_rgb
from env2048.shape import ACTION_NAMES
from oracle.episodes import Episode

PANEL_WIDTH = 320
LINE_PX = 18
_FONT_SIZE = 13
_INK = (0x3C, 0x3A, 0x32)
_GREY = (0xB9, 0xB2, 0xA9)
_BAR = (0x8F, 0x7A, 0x66)
_BEST = (0x2E, 0x8B, 0x57)
_BAD = (0xC0, 0x39, 0x2B)
_PAPER = (0xFA, 0xF8, 0xEF)


def _font():
    try:
        return ImageFont.load_default(size=_FONT_SIZE)
    except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def _fmt(value: float, objective: str) -> str:
    return f"{value:.2f}" if objective == "score" else f"{value:.6f}"


def annotated_frame(episode: Episode, position: int) -> np.ndarray:
    """Frame of ``episode`` at ``position`` (0..moves; ``moves`` = the final board): ``uint8 (H, W, 3)``.  The
    board picture (``render_rgb``, identical to the env's ``rgb_array`` frame) sits at the top left."""
    n = episode.moves
    if not 0 <= position <= n:
        raise ValueError(f"position must be in 0..{n} (the episode has {n} moves), got {position}")
    board = render_rgb(episode.boards[position])
    width = max(board.shape[1], PANEL_WIDTH)
    height = board.shape[0] + 8 * LINE_PX
    image = Image.new("RGB", (width, height), _PAPER)
    image.paste(Image.fromarray(board), (0, 0))
    draw = ImageDraw.Draw(image)
    font = _font()
    y = board.shape[0] + 4
    judged = episode.q_values is not None
    totals = f"score {episode.scores[position]:,}   age {episode.ages[position]:,}"
    if judged:
        cumulative = float(episode.regrets[: position + 1].sum())  # this frame's move included
        totals += f"   cumulative regret {_fmt(cumulative, episode.objective)}"
    if position == n:
        draw.text((6, y), f"game over after {n} moves", fill=_INK, font=font)
        draw.text((6, y + LINE_PX), totals, fill=_INK, font=font)
        return np.asarray(image)
    action = int(episode.actions[position])
    head = f"move {position + 1}/{n}: agent plays {ACTION_NAMES[action]}"
    if judged:
        regret = float(episode.regrets[position])
        head += "  (optimal)" if episode.optimal[position, action] else f"  regret {_fmt(regret, episode.objective)}"
    draw.text((6, y), head, fill=_INK if not judged or regret == 0 else _BAD, font=font)
    draw.text((6, y + LINE_PX), totals, fill=_INK, font=font)
    _draw_q_bars(draw, font, episode, position, y + 2 * LINE_PX + 4, width)
    return np.asarray(image)


def _draw_q_bars(draw, font, episode: Episode, position: int, y: int, width: int) -> None:
    legal = episode.legal[position]
    action = int(episode.actions[position])
    q = episode.q_values[position] if episode.q_values is not None else None
    values = [q[a] for a in range(4) if legal[a]] if q is not None else []
    lo, hi = (min(values), max(values)) if values else (0.0, 0.0)
    bar_x, bar_w = 80, width - 80 - 100
    for a, name in enumerate(ACTION_NAMES):
        top = y + a * LINE_PX
        marker = ">" if a == action else " "
        draw.text((6, top), f"{marker} {name}", fill=_INK if legal[a] else _GREY, font=font)
        if not legal[a]:
            draw.text((bar_x, top), "illegal", fill=_GREY, font=font)
            continue
        fraction = 1.0 if q is None or hi <= lo else 0.12 + 0.88 * (q[a] - lo) / (hi - lo)
        best = q is not None and episode.optimal[position, a]
        draw.rectangle((bar_x, top + 3, bar_x + int(bar_w * fraction), top + LINE_PX - 3), fill=_BEST if best else _BAR)
        if q is not None:
            draw.text((bar_x + bar_w + 6, top), _fmt(float(q[a]), episode.objective), fill=_INK, font=font)


def positions(episode: Episode, frames: int | None = None) -> list[int]:
    """All positions (every move and the end), or ``frames`` of them evenly spaced, first and last included."""
    n = episode.moves
    if frames is None or frames >= n + 1:
        return list(range(n + 1))
    if frames < 2:
        raise ValueError(f"a strip needs at least 2 frames, got {frames}")
    return sorted(set(np.round(np.linspace(0, n, frames)).astype(int).tolist()))


def write_gif(episode: Episode, path, fps: float = 4.0, frames: int | None = None) -> Path:
    """Animated GIF of the episode (every position, or ``frames`` of them), looping; the last frame lingers."""
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    images = [Image.fromarray(annotated_frame(episode, p)) for p in positions(episode, frames)]
    durations = [int(1000 / fps)] * len(images)
    durations[-1] = max(durations[-1], 2000)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(path, save_all=True, append_images=images[1:], duration=durations, loop=0, optimize=False)
    return path


def write_strip(episode: Episode, path, frames: int = 12, columns: int = 6) -> Path:
    """PNG grid of ``frames`` evenly spaced positions (first and last included), ``columns`` per row."""
    if columns < 1:
        raise ValueError(f"columns must be >= 1, got {columns}")
    pictures = [annotated_frame(episode, p) for p in positions(episode, frames)]
    h, w, _ = pictures[0].shape
    rows = -(-len(pictures) // columns)
    gap = 8
    sheet = np.empty((rows * (h + gap) - gap, min(columns, len(pictures)) * (w + gap) - gap, 3), np.uint8)
    sheet[:] = (0xFF, 0xFF, 0xFF)
    for i, picture in enumerate(pictures):
        r, c = divmod(i, columns)
        sheet[r * (h + gap) : r * (h + gap) + h, c * (w + gap) : c * (w + gap) + w] = picture
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(sheet).save(path)
    return path
