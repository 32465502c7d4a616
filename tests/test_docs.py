"""Tier 1: the README and the reference pages keep their promises to a reader.

* every figure the README's headline table quotes is in docs/benchmarks.md, the one page that
  holds it (a figure changed there must be changed in the README too, and the other way);
* the README is a front door: short, `git clone` and `make demo` on its first screen, each
  glossary word defined before it is used;
* every link between the docs reaches a file, and a heading where it names one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
HEADLINE = "<!-- headline"
# A figure as the docs write it: a sign, digits with thousands commas, decimals, % or x.
FIGURE = re.compile(r"(?<![\w.])[+-]?\d[\d,]*(?:\.\d+)?(?:%|x\b)?")
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def headline_rows() -> list[list[str]]:
    """The cells of the README's headline table (the table after the ``<!-- headline``
    comment), header and separator left out."""
    lines = README.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADLINE))
    rows = []
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    assert len(rows) >= 3, "the headline table is missing under its comment"
    return rows[2:]


def figures(text: str) -> list[str]:
    """Every figure quoted in ``text``, with its sign and unit, links left out."""
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return [f.rstrip(",") for f in FIGURE.findall(text)]


def test_figures_are_found_as_written():
    assert figures("+229 [+217, +241] (seed 0), 4.3%, 94x, 1,536 ranks") == [
        "+229", "+217", "+241", "0", "4.3%", "94x", "1,536",
    ]  # fmt: skip
    assert figures("[Scaling](docs/benchmarks.md#scaling) 2") == ["2"]


def test_every_headline_figure_is_in_benchmarks_md():
    """What the README's table quotes, docs/benchmarks.md states: the same figure, written
    the same way, so a reader who follows the row's link finds it."""
    reference = set(figures(BENCHMARKS.read_text()))
    missing = []
    for row in headline_rows():
        assert len(row) == 4, f"a headline row has result, figure, how, section: {row}"
        result, figure, how, section = row
        assert ("measured" in how) != ("projected" in how), f"measured or projected? {row}"
        assert "docs/benchmarks.md#" in section, f"the row links no section: {row}"
        missing += [(f, result) for f in figures(result + " " + figure) if f not in reference]
    assert not missing, f"quoted in README's headline table, not in docs/benchmarks.md: {missing}"


def test_the_headline_table_is_short():
    rows = headline_rows()
    assert len(rows) <= 6, f"{len(rows)} rows: the headline table holds at most 6"
    for row in rows:
        assert len(" | ".join(row)) <= 250, f"a headline row is long: {row}"


def test_the_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 225, f"README.md has {len(lines)} lines (about 220 at most)"
    first = "\n".join(lines[:15])
    assert lines[0].startswith("# "), "the title comes first"
    for command in ("git clone", "make demo", "make test"):
        assert command in first, f"{command!r} is not in the README's first 15 lines"


def glossary() -> dict[str, int]:
    """Each glossary word of the README and the line where it is defined."""
    lines = README.read_text().splitlines()
    start = lines.index("## Glossary")
    words = {}
    for i, line in enumerate(lines[start + 1 :], start + 1):
        if line.startswith("## "):
            break
        for word in re.findall(r"\*\*([^*]+)\*\*", line):
            words.setdefault(word.lower(), i)
    return words


def test_each_glossary_word_is_defined_before_it_is_used():
    """A word the glossary defines is not used above it, except where it is defined inline
    (``*Word*: ...``)."""
    lines = README.read_text().splitlines()
    words = glossary()
    for word in ("slot", "sticky actions", "rank", "update", "generation", "unit"):
        assert word in words, f"the glossary does not define {word!r}"
    for word in ("playing ahead", "projected", "measured"):
        assert any(word in w for w in words), f"the glossary does not define {word!r}"
    for word, defined in words.items():
        for w in re.split(r" and ", word):
            pattern = re.compile(rf"\b{re.escape(w)}(s|es)?\b", re.IGNORECASE)
            inline = re.compile(rf"\*{re.escape(w)}\*:", re.IGNORECASE)
            for i, line in enumerate(lines[:defined]):
                if inline.search(line):
                    break  # defined here, above the glossary
                if not line.startswith("#") and pattern.search(re.sub(r"\]\([^)]*\)", "]", line)):
                    pytest.fail(f"README.md:{i + 1} uses {w!r} before the glossary defines it")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of a markdown page."""
    found = set()
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_reach_a_file_and_a_heading(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: broken link {target}"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{page.name}: {target} names no heading"
