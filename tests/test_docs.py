"""The documentation's quick-start code runs: every ```python block of the getting-started page, the README and
the JAX page, in order, in one namespace per page (so the examples cannot rot).  The site itself is built with
``mkdocs build --strict`` by ``make test``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["docs/getting-started.md", "README.md", "docs/jax.md"]


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_quick_start_code_runs(page, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / page)
    assert blocks, f"{page} has no python code block"
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    namespace: dict = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{page}, python block {i + 1}", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"{page}, python block {i + 1} failed: {err!r}\n{block}") from err


def test_the_citation_names_the_package_s_version():
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    citation = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^cff-version: 1\.2\.0$", citation, flags=re.M)
    assert re.search(rf'^version: "{re.escape(version)}"$', citation, flags=re.M), version
    assert re.search(r"^title: .+", citation, flags=re.M) and re.search(
        r"^authors:\n  - name: .+", citation, flags=re.M
    )
    # the schema itself is checked by `make citation` (cffconvert); here what the schema cannot know
    from experiments.suite.tasks import SUITE_VERSION

    assert f"carries suite v{SUITE_VERSION} " in citation
    assert re.search(r'^date-released: "\d{4}-\d{2}-\d{2}"$', citation, flags=re.M)
    assert "family-names: Kaneko" in citation and "50,724.26" in citation  # the 4x3 optimum's source
