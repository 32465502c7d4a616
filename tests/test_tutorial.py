"""The tutorial (docs/tutorial/*.md) cannot rot: its commands and Python blocks are run.

Fenced blocks are read by their info string:

* ```` ```bash ````: run with ``bash -euo pipefail``, in order, from the root of a fresh copy
  of the repository (so the benchmarks' figures and results land in the copy); no block
  may change a file of the checkout (the benchmarks write under runs/, and only rewrite
  docs/figures when asked to);
* ```` ```python ````: run with this Python, from the same folder;
* ```` ```python file=NAME ````: a file the reader saves: written to NAME, not run;
* ```` ```bash no-test: REASON ```` (or python): not run, because it cannot run here (a
  cluster) or is an excerpt of pgmpi's code; checked instead: it parses, the repository
  files it names exist and the flags it passes to them are in their ``--help``;
* ```` ```text ````: output the reader should see; not checked (figures vary).

Sizes are shrunk with the variables the tutorial names in the ``export`` line of its
README's no-test block (``UPDATES=1 MINUTES=0.05 ...``): the test reads them from there.
The checks of the markdown itself run in tier 1; running the steps is tier 3 (it launches
``mpirun``), one test per step, each reporting every failing block, not only the first.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial"
STEPS = sorted(TUTORIAL.glob("[0-9][0-9]-*.md"))
PAGES = [TUTORIAL / "README.md", *STEPS]
BLOCK_TIMEOUT = 900  # seconds for one block; every mpirun inside has its own timeout too
COPY_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "runs", "results", "__pycache__", "*.egg-info", ".*_cache"
)
FENCE = re.compile(r"^```(\S*)[ \t]*(.*)$")


class Block:
    """One fenced block: its language, its file name or no-test reason, code and line."""

    def __init__(self, page: Path, line: int, lang: str, rest: str, code: str):
        self.page, self.line, self.lang, self.code = page, line, lang, code
        self.file = rest[len("file=") :].strip() if rest.startswith("file=") else None
        self.reason = rest[len("no-test:") :].strip() if rest.startswith("no-test:") else None
        self.rest = rest

    def __repr__(self) -> str:
        return f"{self.page.name}:{self.line} ({self.lang} {self.rest})".rstrip()


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    found, lines, i = [], page.read_text().splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{page.name}:{start}: fence never closed"
        found.append(Block(page, start, m.group(1), m.group(2), "\n".join(body) + "\n"))
        i += 1
    return found


def quick_settings() -> dict[str, str]:
    """The small sizes, from the ``export`` line of the tutorial README's no-test block."""
    for b in blocks(TUTORIAL / "README.md"):
        if b.lang == "bash" and b.reason is not None and b.code.startswith("export "):
            return dict(word.split("=", 1) for word in shlex.split(b.code)[1:])
    raise AssertionError("docs/tutorial/README.md has no `export NAME=VALUE ...` no-test block")


def commands(code: str) -> list[list[str]]:
    """The simple commands of a bash block, split into words (comments and $(...) kept)."""
    joined = code.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s*(?:&&|\|\||;|\||&)\s*", line):
            if part:
                try:
                    out.append(shlex.split(part))
                except ValueError:
                    out.append(part.split())
    return out


# ---------------------------------------------------------------- tier 1: the markdown


def test_the_tutorial_has_its_nine_steps_and_readme_links_it():
    assert len(STEPS) == 9, [p.name for p in STEPS]
    readme = (ROOT / "README.md").read_text()
    assert "docs/tutorial/README.md" in readme, "README.md does not link the tutorial"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_is_runnable_or_says_why_not(page):
    runnable = 0
    for b in blocks(page):
        assert b.lang in ("bash", "python", "text"), f"{b}: unknown language {b.lang!r}"
        if b.lang == "text":
            continue
        assert b.rest == "" or b.file or b.reason, f"{b}: unknown info string {b.rest!r}"
        if b.reason is not None:
            assert len(b.reason) >= 10, f"{b}: say why it cannot run (`no-test: reason`)"
        else:
            runnable += 1
    assert runnable >= 1, f"{page.name} has nothing to run"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_mpirun_is_bounded_by_timeout(page):
    for b in blocks(page):
        if b.lang != "bash" or b.reason is not None:
            continue
        for words in commands(b.code):
            if "mpirun" in words:
                assert "timeout" in words[: words.index("mpirun")], f"{b}: {' '.join(words)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_and_figures_exist(page):
    for target in re.findall(r"\]\(([^)#\s]+)\)", page.read_text()):
        if "://" not in target:
            assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def test_every_size_variable_is_used():
    """Each quick setting shrinks something, and no command reads a size it does not set."""
    text = "\n".join(b.code for p in PAGES for b in blocks(p) if b.reason is None)
    quick = quick_settings()
    for name in quick:
        assert f"${{{name}:-" in text or f'"{name}"' in text, f"{name} is never used"
    for name in set(re.findall(r"\$\{([A-Z_]+):-", text)):
        assert name in quick, f"${{{name}:-...}} is used but not in the quick settings"


def _code(line: str) -> str:
    """A line of Python without indentation or trailing comment (excerpts add comments)."""
    return line.split("  #", 1)[0].strip()


def _help(script: Path) -> str:
    proc = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
        cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, f"{script} --help failed: {proc.stderr[-2000:]}"
    return proc.stdout


def test_blocks_that_are_not_run_parse_and_name_real_files_and_flags():
    """A no-test block cannot run here, so check what can be: its syntax; for a Python
    excerpt, that each of its lines is still in the file it quotes; for a shell block, that
    the repository files it names exist and each flag it passes to one of our scripts is in
    its --help."""
    helps: dict[Path, str] = {}
    for page in PAGES:
        for b in blocks(page):
            if b.reason is None:
                continue
            if b.lang == "python":
                ast.parse(b.code)  # excerpts must at least be Python
                excerpt = re.match(r"an excerpt of .*?([\w/]+\.py)", b.reason)
                assert excerpt, f"{b}: a Python no-test block must say `an excerpt of FILE.py`"
                source = {
                    _code(line) for line in (ROOT / excerpt.group(1)).read_text().splitlines()
                }
                for line in b.code.splitlines():
                    if _code(line) not in ("", "...") and not line.lstrip().startswith("#"):
                        assert _code(line) in source, f"{b}: not in {excerpt.group(1)}: {line}"
                continue
            syntax = subprocess.run(["bash", "-n"], input=b.code, capture_output=True, text=True)
            assert syntax.returncode == 0, f"{b}: {syntax.stderr}"
            for words in commands(b.code):
                paths = [w for w in words if re.fullmatch(r"[\w./-]+\.(py|sbatch|sh)", w)]
                for w in paths:
                    assert (ROOT / w).exists(), f"{b}: names {w}, which does not exist"
                script = next((ROOT / w for w in paths if w.endswith(".py")), None)
                if script is None:
                    continue
                text = helps.setdefault(script, _help(script))
                after = words[words.index(str(script.relative_to(ROOT))) + 1 :]
                for flag in (w.split("=")[0] for w in after if w.startswith("--")):
                    assert flag in text, f"{b}: {script.name} has no flag {flag}"


# ---------------------------------------------------------------- tier 3: running it


def _run(cmd: list[str], cwd: Path, env: dict) -> tuple[int | None, str, float]:
    """Run ``cmd`` in its own process group; kill the group if it outlives BLOCK_TIMEOUT."""
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=BLOCK_TIMEOUT)
        return proc.returncode, out, time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out, time.monotonic() - start


def _checkout_files(repo: Path) -> dict[str, str]:
    """SHA-256 of every file in the copy of the checkout, by its path relative to ``repo``."""
    return {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(repo.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.mark.launcher
@pytest.mark.parametrize("page", [TUTORIAL / "README.md", *STEPS], ids=lambda p: p.name)
def test_the_step_runs(page, tmp_path):
    """Every runnable block of one page, in order, with the quick sizes, in a fresh copy of
    the repository. All blocks are tried; the test fails listing every one that failed, and
    if any file of the checkout (docs/figures/*.png, say) was changed or removed."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=COPY_IGNORE)
    before = _checkout_files(repo)
    (repo / "runs" / "tutorial").mkdir(parents=True)  # made by the README's first block
    if sys.prefix != sys.base_prefix:  # the reader's `source .venv/bin/activate`: this venv
        (repo / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    env = dict(
        os.environ,
        **quick_settings(),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(repo),
        PYTHONUNBUFFERED="1",
        MPLBACKEND="Agg",
    )
    failures, report = [], []
    for i, b in enumerate(blocks(page)):
        if b.reason is not None or b.lang == "text":
            continue
        if b.file is not None:
            (repo / b.file).write_text(b.code)
            continue
        if b.lang == "bash":
            cmd = ["bash", "-euo", "pipefail", "-c", b.code]
        else:
            script = tmp_path / f"block_{i}.py"
            script.write_text(b.code)
            cmd = [sys.executable, str(script)]
        code, out, seconds = _run(cmd, repo, env)
        report.append(f"{b}: {'timed out' if code is None else f'exit {code}'}, {seconds:.1f} s")
        if code != 0:
            failures.append(f"--- {b} failed ({report[-1]}):\n{b.code}\n{out[-3000:]}")
    after = _checkout_files(repo)
    changed = sorted(name for name, digest in before.items() if after.get(name) != digest)
    if changed:  # a reader's checkout would show these in `git status`
        failures.append(f"--- the step changed files of the checkout: {', '.join(changed)}")
    print("\n".join(report))
    assert not failures, "\n".join(failures)
