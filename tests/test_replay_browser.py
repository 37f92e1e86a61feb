"""The replay page in a real browser: headless Chromium opens the file from disk (selenium drives it, keys
included); the test reads the DOM and saves a screenshot.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and selenium (extra ``dev``);
without them the test is skipped, and says why.  ``SOLVED2048_REQUIRE_BROWSER=1`` (set by ``.ci/run``) turns the
skip into a failure.  ``SOLVED2048_SCREENSHOT=PATH`` also writes the screenshot there (the Replays page's picture:
``SOLVED2048_SCREENSHOT=docs/replay-viewer.png .venv/bin/python -m pytest tests/test_replay_browser.py``).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from sockets import descendants

from experiments import replay
from oracle import Oracle

from conftest import SYSTEM_HOME, SYSTEM_TMP

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

#: How long a test waits for something the page or the browser does in a moment, before it fails: a guard against
#: waiting for ever, far above the moment, so that a loaded machine does not decide the result.
GUARD_S = 60


def _browser_paths() -> tuple[str, str]:
    missing = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[dev]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium:
        missing.append("a chromium browser (apt-get install -y chromium chromium-driver)")
    if not driver:
        missing.append("chromedriver (apt-get install -y chromium-driver)")
    if missing:
        reason = "browser test not run: missing " + "; ".join(missing)
        if os.environ.get("SOLVED2048_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " (SOLVED2048_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    return chromium, driver


def start_browser(profile: Path):
    """Headless Chromium driven by chromedriver, with its profile in ``profile`` (inside pytest's tmp_path; its
    temporary files go to the session's TMPDIR, which conftest.py puts there too) and no network of its own: no
    background requests, component updates, sync or QUIC, which this machine's closed network refuses."""
    chromium, driver_path = _browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1100,800",
        "--allow-file-access-from-files",
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path), options=options)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_browser(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "replay.html"
    Oracle.for_board("3x3", progress=False)  # build the cached table quietly
    games = replay.replay("3x3", "greedy", seed=0, episodes=3, out=out)
    return out, games


def _by(kind):
    from selenium.webdriver.common.by import By

    return getattr(By, kind)


def _state(driver) -> dict:
    """What the page shows, read from the DOM in one script call (autoplay may redraw between calls)."""
    return driver.execute_script(
        """const b = document.body.dataset;
        return {position: Number(b.position), moves: Number(b.moves), episode: Number(b.episode),
                board: Array.from(document.querySelectorAll("#board .tile"), (t) => Number(t.dataset.exp))};"""
    )


def _press(driver, key: str, times: int = 1) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    for _ in range(times):
        ActionChains(driver).send_keys(getattr(Keys, key)).perform()


def test_the_page_replays_the_game_in_a_browser(browser, page, tmp_path):
    path, games = page
    game = games[0]
    browser.get(path.resolve().as_uri())
    first = _state(browser)
    assert first == {"position": 0, "moves": game.moves, "episode": 0, "board": game.boards[0].ravel().tolist()}
    assert len(browser.find_elements(_by("CSS_SELECTOR"), "#episode option")) == 3

    _press(browser, "END")
    end = _state(browser)
    assert end["position"] == game.moves and end["board"] == game.boards[-1].ravel().tolist()
    assert "Game over" in browser.find_element(_by("ID"), "qtitle").text

    _press(browser, "HOME")
    _press(browser, "ARROW_RIGHT", 2)
    now = _state(browser)
    assert now["position"] == 2 and now["board"] == game.boards[2].ravel().tolist()
    rows = browser.find_elements(_by("CSS_SELECTOR"), "#qvalues .qrow")
    assert len(rows) == 4
    for a, row in enumerate(rows):
        classes = row.get_attribute("class").split()
        value = row.find_element(_by("CSS_SELECTOR"), ".val").text
        if game.legal[2, a]:
            assert value == f"{game.q_values[2, a]:.2f}"
        else:
            assert value == "illegal" and "illegal" in classes
        assert ("agent" in classes) == (a == game.actions[2])
        assert ("best" in classes) == bool(game.optimal[2, a])
    _press(browser, "ARROW_LEFT")
    assert _state(browser)["position"] == 1

    # the timeline jumps to the move under the click
    timeline = browser.find_element(_by("ID"), "timeline")
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element_with_offset(timeline, 0, 0).click().perform()  # the centre
    assert abs(_state(browser)["position"] - game.moves // 2) <= 1

    # autoplay advances by itself; Space pauses it
    browser.execute_script("document.getElementById('speed').value = '40'")
    _press(browser, "HOME")
    _press(browser, "SPACE")
    give_up = time.monotonic() + GUARD_S
    while _state(browser)["position"] < 3 and time.monotonic() < give_up:
        time.sleep(0.05)
    _press(browser, "SPACE")
    paused = _state(browser)["position"]
    assert paused >= 3
    time.sleep(0.3)
    assert _state(browser)["position"] == paused

    # another episode
    from selenium.webdriver.support.select import Select

    Select(browser.find_element(_by("ID"), "episode")).select_by_index(1)
    second = _state(browser)
    assert (second["episode"], second["moves"], second["position"]) == (1, games[1].moves, 0)
    assert second["board"] == games[1].boards[0].ravel().tolist()

    # the screenshot: the first game at its costliest move
    Select(browser.find_element(_by("ID"), "episode")).select_by_index(0)
    worst = int(np.argmax(game.regrets))
    _press(browser, "ARROW_RIGHT", worst)
    assert _state(browser)["position"] == worst
    assert "regret" in browser.find_element(_by("ID"), "verdict").text
    shot = tmp_path / "replay-viewer.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("SOLVED2048_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["SOLVED2048_SCREENSHOT"])
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors


def test_a_board_without_a_table_still_replays(browser, tmp_path):
    _browser_paths()
    out = tmp_path / "r.html"
    games = replay.replay("4x4", "greedy", seed=1, episodes=1, out=out)
    browser.get(out.resolve().as_uri())
    note = browser.find_element(_by("ID"), "note")
    assert note.is_displayed() and "too large to solve here" in note.text
    _press(browser, "ARROW_RIGHT", 3)
    state = _state(browser)
    assert state["position"] == 3 and state["board"] == games[0].boards[3].ravel().tolist()
    values = [e.text for e in browser.find_elements(_by("CSS_SELECTOR"), "#qvalues .val")]
    assert set(values) <= {"legal", "illegal"}


def _badges_overflow(driver) -> list:
    """How far (px) each badge that reaches past the right edge of its Q-value row (the box outlined around the
    agent's move) does so."""
    return driver.execute_script(
        """return Array.from(document.querySelectorAll("#qvalues .badge"), (b) => b.getBoundingClientRect().right
          - b.closest(".qrow").getBoundingClientRect().right).filter((over) => over > 0.5);"""
    )


def test_a_pattern_game_shows_its_fixed_tiles_and_target_cells(browser, tmp_path):
    """An endgame pattern's replay (3x3, one fixed 256, T = 16 on the top-right cell): the title names the
    pattern, the fixed cell and the target cell are marked on every board, and the badges stay in their box."""
    from env2048.pattern import Pattern
    from solver.build import build
    from solver.spec import SolveSpec

    pattern = Pattern.from_dict({"rows": 3, "cols": 3, "grid": [". . t", ". . .", ". . 256"], "target": 16})
    build(SolveSpec.for_pattern(pattern), tmp_path / "corner", progress=False, layout="directory")
    out = tmp_path / "r.html"
    games = replay.replay(None, "greedy", seed=0, episodes=1, out=out, table=tmp_path / "corner")
    assert games[0].pattern == pattern.describe() and games[0].fixed_cells == (8,) and games[0].goal_cells == (2,)
    browser.get(out.resolve().as_uri())
    assert browser.find_element(_by("ID"), "title").text.startswith("pattern custom (3x3, 8 free cells, target 16)")
    for _ in range(min(games[0].moves, 4) + 1):
        tiles = browser.find_elements(_by("CSS_SELECTOR"), "#board .tile")
        assert [i for i, t in enumerate(tiles) if "fixed" in t.get_attribute("class").split()] == [8]
        assert [i for i, t in enumerate(tiles) if "goal" in t.get_attribute("class").split()] == [2]
        assert _state(browser)["board"][8] == 8 and _badges_overflow(browser) == []
        _press(browser, "ARROW_RIGHT")
    assert "fixed tiles" in browser.find_element(_by("ID"), "legend").text


def test_the_badges_stay_inside_their_box_on_2x4(browser, tmp_path):
    """The optimal player's moves carry both badges (agent and optimal): on a 2x4 game they overflowed the row's
    box before; they fit inside it now."""
    out = tmp_path / "r.html"
    games = replay.replay("2x4", "optimal", seed=0, episodes=1, out=out)
    browser.get(out.resolve().as_uri())
    for _ in range(min(games[0].moves, 30)):
        assert _badges_overflow(browser) == []
        _press(browser, "ARROW_RIGHT")


def _chromium_traces() -> set[str]:
    """What Chromium leaves in the machine's temporary directory and home when it is not told otherwise: its
    singleton directories (``org.chromium.Chromium.*``) and its profile, crash reports and dconf cache."""
    found = {str(p) for p in Path(SYSTEM_TMP).glob("*org.chromium.*")}
    for sub in (".config/chromium", ".cache/chromium", ".cache/dconf"):
        if (Path(SYSTEM_HOME) / sub).exists():
            found.add(str(Path(SYSTEM_HOME) / sub))
    return found


def test_the_browser_keeps_its_files_in_tmp_path(tmp_path):
    """A browser started as the tests start it writes its profile where it is told and, once it has quit, left
    nothing in the machine's temporary directory or home, nor a process."""
    _browser_paths()
    before = _chromium_traces()
    profile = tmp_path / "profile"
    driver = start_browser(profile)
    try:
        driver.get((tmp_path / "none.html").as_uri())  # a page that does not exist is enough
        processes = descendants(driver.service.process.pid)
        assert "chromedriver" in processes.values() and len(processes) > 1, processes
    finally:
        driver.quit()
    assert (profile / "Default").is_dir(), sorted(p.name for p in profile.iterdir())
    assert _chromium_traces() - before == set()
    give_up = time.monotonic() + GUARD_S  # the browser's helpers end a moment after chromedriver
    while (alive := _running(processes)) and time.monotonic() < give_up:
        time.sleep(0.05)
    assert not alive, f"browser processes outlived quit() by {GUARD_S} s: {alive}"


def _running(pids) -> list[int]:
    """Those of ``pids`` that still run (a zombie has ended, whoever reaps it)."""
    out = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            out.append(pid)
    return out
