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
Tier 1 also checks what the text cites, in the tutorial and the README: every dotted name
quoted as inline code that starts with a pgmpi module or name (`rollout.play`,
`ParallelPG.step`) and every repository path (`pgmpi/ahead.py`) still exists, and every
excerpt (``an excerpt of [NAME in] FILE.py``) is still, line for line and in order, in the
code it names. The checks of the markdown itself run in tier 1; running the steps is tier 3
(it launches ``mpirun``), one test per step, each reporting every failing block, not only
the first.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import os
import pkgutil
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
    excerpt, that it is still in the code it quotes (:func:`check_excerpt`); for a shell
    block (the README's too), that the repository files it names exist and each flag it
    passes to one of our scripts is in its --help."""
    helps: dict[Path, str] = {}
    readme_shell = [b for b in blocks(ROOT / "README.md") if b.lang == "bash"]
    for b in readme_shell:
        b.reason = b.reason or "the README's commands: checked, not run"
    for page in [*PAGES, None]:
        for b in blocks(page) if page is not None else readme_shell:
            if b.reason is None:
                continue
            if b.lang == "python":
                ast.parse(b.code)  # excerpts must at least be Python
                check_excerpt(b)
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


EXCERPT = re.compile(r"an excerpt of (?:([\w.]+) in )?([\w/]+\.py)")


def _source_of(name: str | None, file: str) -> tuple[list[str], str]:
    """The lines of the code an excerpt quotes: the object ``name`` (``ParallelPG.step``,
    ``rollout.run``, ``mpi.ExactSum.add``) in ``file``, or the whole file."""
    path = ROOT / file
    assert path.exists(), f"the excerpt quotes {file}, which does not exist"
    if name is None:
        return path.read_text().splitlines(), file
    module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
    parts = name.split(".")
    while parts and parts[0] in module.__name__.split("."):  # rollout.run in rollout.py
        parts = parts[1:]
    obj = module
    for part in parts:
        obj = getattr(obj, part, None)
        assert obj is not None, f"the excerpt names {name}, which {file} no longer has"
    return inspect.getsource(obj).splitlines(), f"{name} in {file}"


def check_excerpt(b: Block) -> None:
    """A Python no-test block says ``an excerpt of [NAME in] FILE.py``; each of its lines
    (other than ``...`` and comments) must be in that code, in the excerpt's order."""
    m = EXCERPT.search(b.reason)
    assert m, f"{b}: a Python no-test block must say `an excerpt of [NAME in] FILE.py`"
    source, where = _source_of(m.group(1), m.group(2))
    code = [_code(line) for line in source]
    at = 0
    for line in b.code.splitlines():
        if _code(line) in ("", "...") or line.lstrip().startswith("#"):
            continue
        if _code(line) not in code[at:]:
            where_else = "" if _code(line) in code else " at all"
            pytest.fail(f"{b}: not in {where}{where_else} (or out of order): {line.strip()}")
        at += code[at:].index(_code(line)) + 1


# A span of inline code that is a dotted name, maybe called: `rollout.play`, `Adam.step`,
# `pgmpi.mpi.shared_counter`, `agent.evaluate(live=True)`.
DOTTED = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
PATH = re.compile(r"(?:pgmpi|tests|examples|benchmarks)/[\w/.-]*\.(?:py|sh|sbatch)|pgmpi/[\w/]*")


def _pgmpi_index() -> tuple[dict[str, list], dict[str, object]]:
    """Every pgmpi module, and every name a pgmpi module defines (classes, functions,
    constants, modules by their last name), each with the objects it may be."""
    import pgmpi

    modules = {"pgmpi": pgmpi}
    for info in pkgutil.walk_packages(pgmpi.__path__, "pgmpi."):
        try:
            modules[info.name] = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
    index: dict[str, list] = {}
    for name, module in modules.items():
        index.setdefault(name.rsplit(".", 1)[-1], []).append(module)
        for attr, obj in vars(module).items():
            home = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
            if (
                isinstance(home, str)
                and home.startswith("pgmpi")
                and obj not in index.get(attr, [])
            ):
                index.setdefault(attr, []).append(obj)
    return index, modules


def _has(obj, attr: str, modules: dict[str, object]) -> object | None:
    """``obj.attr``, looked for also in a package's modules and, for a class, among the
    attributes its code sets on ``self`` (``self.mine = ...``) or its dataclass fields."""
    found = getattr(obj, attr, None)
    if found is not None:
        return found
    if inspect.ismodule(obj) and hasattr(obj, "__path__"):
        for name, module in modules.items():
            if name.startswith(obj.__name__ + ".") and hasattr(module, attr):
                return getattr(module, attr)
    if inspect.isclass(obj):
        fields = getattr(obj, "__dataclass_fields__", {})
        source = "".join(
            inspect.getsource(c) for c in obj.__mro__ if c.__module__.startswith("pgmpi")
        )
        if attr in fields or re.search(rf"self\.{attr}\b\s*(:[^=]*)?=", source):
            return True
    return None


def cited_names(page: Path) -> list[tuple[int, str]]:
    """The dotted names a page cites as inline code, with their line numbers (fenced
    blocks left out)."""
    found, fenced = [], False
    for i, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            found += [(i, span) for span in SPAN.findall(line)]
    return found


def test_dotted_names_are_resolved_as_written():
    index, modules = _pgmpi_index()
    assert _resolve("rollout.play", index, modules) is True
    assert _resolve("pgmpi.mpi.ExactSum.allreduce", index, modules) is True
    assert _resolve("ParallelPG._one_update", index, modules) is False  # gone: caught
    assert _resolve("np.random.default_rng", index, modules) is None  # not pgmpi's


def _resolve(dotted: str, index, modules) -> bool | None:
    """True if ``dotted`` names something in pgmpi, False if it starts as a pgmpi name but
    the rest is missing, None if it is not a pgmpi name at all."""
    first, *rest = dotted.split(".")
    starts = [modules["pgmpi"]] if first == "pgmpi" else index.get(first)
    if not starts:
        return None
    for obj in starts:
        for attr in rest:
            obj = _has(obj, attr, modules)
            if obj is None or obj is True and attr != rest[-1]:
                break
        else:
            return True
    return False


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_pgmpi_name_cited_as_code_exists(page):
    """A name the text cites as code (`ParallelPG.step`, `rollout.play`, `pgmpi/ahead.py`)
    is still in pgmpi, so a student who looks it up finds it."""
    index, modules = _pgmpi_index()
    missing = []
    for line, span in cited_names(page):
        for path in PATH.findall(span):
            if "*" not in path and not (ROOT / path).exists():
                missing.append(f"{page.name}:{line}: {path} does not exist")
        m = DOTTED.fullmatch(span.strip())
        if m and _resolve(m.group(1), index, modules) is False:
            missing.append(f"{page.name}:{line}: {m.group(1)} is not in pgmpi")
    for b in blocks(page):  # what a Python block imports from pgmpi exists
        if b.lang != "python":
            continue
        for node in ast.walk(ast.parse(b.code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pgmpi"):
                module = importlib.import_module(node.module)
                missing += [
                    f"{b}: {node.module} has no {alias.name}"
                    for alias in node.names
                    if _has(module, alias.name, modules) is None
                ]
    assert not missing, "\n".join(missing)


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
