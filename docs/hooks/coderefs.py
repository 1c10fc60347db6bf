"""Code references in the docs must exist: a mkdocs hook, and a checker the tests reuse.

Pages name modules, functions and files of this repository (``ducklake_datafusion.scan.
ScanPlan``, ``provider/_rust_lazy.py``, ``tests/spark/test_spark.py::test_x``). When the
code moves on, such a name silently becomes wrong; this check makes it fail the strict
docs build (a warning of the ``mkdocs`` logger aborts ``mkdocs build --strict``) and
``tests/test_docs.py`` (which also runs it on README.md, outside the site).

It reads the source with ``ast`` and never imports the package, so it runs in the docs
build's own small venv, without the Rust extension, pyspark or a JDK. What it checks, in
inline code spans and in ``from ducklake_datafusion... import ...`` lines of code blocks:

* dotted names starting with ``ducklake_datafusion``: the longest prefix that is a module
  (``.py``, ``.pyi`` or a package) must exist, the next part must be defined at its top
  level (a def, class, assignment or import), and a further part must be defined in that
  class's body when the class is defined there;
* paths under the repository's top-level directories (``tests/``, ``bench/``, ``rust/``,
  ...), under the package (``catalog/_refresh.py`` means ``ducklake_datafusion/catalog/
  _refresh.py``) and the jar's Java files by name: the file must exist, and a
  ``::test_name`` suffix must name a function of that file.

A span followed by `` (removed)`` records code that is gone (the history pages) and is
not checked. Anything else in backticks (SQL, options, example file names) is left alone.
"""

from __future__ import annotations

import ast
import functools
import logging
import re
from pathlib import Path

__all__ = ["check_markdown", "on_page_markdown"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "ducklake_datafusion"
JAVA_DIR = Path("jvm/src/main/java/io/ducklake_datafusion/spark")
# Paths whose first part is one of these are checked.
TOP_DIRS = {"tests", "bench", "examples", "jvm", "rust", "docs", ".ci", PACKAGE}
PACKAGE_DIRS = {"catalog", "pathres", "scan", "read", "provider", "spark"}
TOP_FILES = {"Makefile", "pyproject.toml", "mkdocs.yml", "README.md", ".gitignore"}

_FENCE = re.compile(r"^(```|~~~)")
_SPAN = re.compile(r"(`+)(.+?)\1( \(removed\))?")
_IMPORT = re.compile(r"^\s*from\s+(ducklake_datafusion[\w.]*)\s+import\s+\(?([\w\s,]+)\)?")
_DOTTED = re.compile(r"^ducklake_datafusion(\.\w+)*$")
_PATH = re.compile(r"^[\w.-]+(/[\w.-]+)*/?(::\w+)?$")

log = logging.getLogger("mkdocs.plugins.coderefs")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Warn (which fails the strict build) for every reference the page gets wrong."""
    for problem in check_markdown(markdown, ROOT):
        log.warning("%s: %s", page.file.src_path, problem)
    return markdown


def check_markdown(text: str, root: Path = ROOT) -> list[str]:
    """The problems of ``text``'s code references, one message each (empty: all exist)."""
    problems = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        refs: list[str] = []
        if fenced:
            match = _IMPORT.match(line)
            if match:
                refs += [
                    f"{match[1]}.{name.strip()}" for name in match[2].split(",") if name.strip()
                ]
        else:
            refs += [span.strip() for _, span, removed in _SPAN.findall(line) if not removed]
        for ref in refs:
            problem = _check_ref(ref, root)
            if problem:
                problems.append(f"line {number}: `{ref}` {problem}")
    return problems


def _check_ref(ref: str, root: Path) -> str | None:
    if _DOTTED.match(ref):
        return _check_dotted(ref.split("."), root)
    if not _PATH.match(ref):
        return None
    path, _, test = ref.partition("::")
    first = path.split("/")[0]
    if path in TOP_FILES or first in TOP_DIRS:
        candidates = [root / path]
    elif first in PACKAGE_DIRS and "/" in path or path in {"types.py", "errors.py", "cli.py"}:
        candidates = [root / PACKAGE / path]
    elif "/" not in path and path.endswith(".java"):
        candidates = [root / JAVA_DIR / path]
    else:
        return None
    found = next((c for c in candidates if c.exists()), None)
    if found is None:
        return "names a file that does not exist"
    if test and not re.search(
        rf"^\s*(async\s+)?def {re.escape(test)}\(", found.read_text(), re.MULTILINE
    ):
        return f"names no function {test} in {found.relative_to(root)}"
    return None


def _check_dotted(parts: list[str], root: Path) -> str | None:
    """Resolve ``parts`` against the source tree, without importing anything."""
    module = None
    taken = 0
    for end in range(len(parts), 0, -1):
        module = _module_file(parts[:end], root)
        if module is not None:
            taken = end
            break
    if module is None:
        return "names a module that does not exist"
    rest = parts[taken:]
    if not rest:
        return None
    names, classes = _top_level(module)
    if rest[0] not in names:
        return f"names {rest[0]}, which {module.relative_to(root)} does not define"
    if len(rest) > 1 and rest[0] in classes and rest[1] not in classes[rest[0]]:
        return f"names {rest[1]}, which class {rest[0]} does not define"
    return None


def _module_file(parts: list[str], root: Path) -> Path | None:
    base = root.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py"), base.with_suffix(".pyi")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _top_level(module: Path) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """The names ``module`` defines at its top level, and each class's own names."""
    tree = ast.parse(module.read_text(), str(module))
    names: set[str] = set()
    classes: dict[str, frozenset[str]] = {}
    for node in tree.body:
        names |= _bound(node)
        if isinstance(node, ast.ClassDef):
            members: set[str] = set()
            for item in node.body:
                members |= _bound(item)
            classes[node.name] = frozenset(members)
    # Names set under `if TYPE_CHECKING:` / try-except at the top level count too.
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Try)):
            for item in ast.iter_child_nodes(node):
                names |= _bound(item)
    return frozenset(names), classes


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    found = set()
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                found.add(sub.id)
    return found
