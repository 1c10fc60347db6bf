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
  level (a def, class, assignment or import, followed to where it is defined), and a
  further part must be an attribute of that class (its own or a package base's);
* ``Class.member`` (or ``Class.member()``) of a class the package, ``spark``, ``scan`` or
  ``read`` exports (``DuckLakeCatalog.forget_metadata()``): the class, followed through
  imports, must define the member or inherit it from a class of the package;
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
# The jar's shared sources, and the per-Scala-version ones (jvm/pom.xml).
JAVA_DIRS = ("jvm/src/main/java", "jvm/src/scala-2.12/java", "jvm/src/scala-2.13/java")
JAVA_PACKAGE = Path("io/ducklake_datafusion/spark")
# Paths whose first part is one of these are checked.
TOP_DIRS = {"tests", "bench", "examples", "jvm", "rust", "docs", ".ci", PACKAGE}
PACKAGE_DIRS = {"catalog", "pathres", "scan", "read", "provider", "spark"}
TOP_FILES = {"Makefile", "pyproject.toml", "mkdocs.yml", "README.md", ".gitignore"}

_FENCE = re.compile(r"^(```|~~~)")
_SPAN = re.compile(r"(`+)(.+?)\1( \(removed\))?")
_IMPORT = re.compile(r"^\s*from\s+(ducklake_datafusion[\w.]*)\s+import\s+\(?([\w\s,]+)\)?")
_DOTTED = re.compile(r"^ducklake_datafusion(\.\w+)*$")
_MEMBER = re.compile(r"^([A-Z]\w+)\.(\w+)(\(.*\))?$")
# Packages whose exported classes pages name by their short name (`DuckLakeCatalog.at`).
PUBLIC = (PACKAGE, f"{PACKAGE}.spark", f"{PACKAGE}.scan", f"{PACKAGE}.read")
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
    if _MEMBER.match(ref) and not ref.endswith((".java", ".py", ".rs", ".md")):
        return _check_member(ref, root)
    if not _PATH.match(ref):
        return None
    path, _, test = ref.partition("::")
    first = path.split("/")[0]
    if path in TOP_FILES or first in TOP_DIRS:
        candidates = [root / path]
    elif first in PACKAGE_DIRS and "/" in path or path in {"types.py", "errors.py", "cli.py"}:
        candidates = [root / PACKAGE / path]
    elif "/" not in path and path.endswith(".java"):
        candidates = [root / d / JAVA_PACKAGE / path for d in JAVA_DIRS]
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
    found = _definition(module, rest[0], root)
    if found is None:
        return f"names {rest[0]}, which {module.relative_to(root)} does not define"
    if len(rest) > 1:
        members = _members(*found, root)
        if members is not None and rest[1] not in members:
            return f"names {rest[1]}, which class {rest[0]} does not define"
    return None


def _check_member(ref: str, root: Path) -> str | None:
    """``Class.member`` or ``Class.member(...)`` of a class the package exports."""
    match = _MEMBER.match(ref)
    if not match:
        return None
    for package in PUBLIC:
        module = _module_file(package.split("."), root)
        if module is not None and _definition(module, match[1], root) is not None:
            return _check_dotted([*package.split("."), match[1], match[2]], root)
    return None


def _module_file(parts: list[str], root: Path) -> Path | None:
    base = root.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py"), base.with_suffix(".pyi")):
        if candidate.is_file():
            return candidate
    return None


def _definition(module: Path, name: str, root: Path, depth: int = 0) -> tuple[Path, str] | None:
    """Where ``name``, as seen from ``module``, is defined: (module, name); ``None``: nowhere.

    A name imported from inside the package is followed to its module; one imported from
    elsewhere (or not followable) is taken as defined where it is imported.
    """
    names, imports = _top_level(module)
    if name not in names:
        return None
    if name in imports and depth < 10:
        source, original = imports[name]
        target = _module_file(source, root)
        if target is not None:
            found = _definition(target, original, root, depth + 1)
            if found is not None:
                return found
            sub = _module_file([*source, original], root)  # `from . import module`
            if sub is not None:
                return sub, ""
    return module, name


def _members(module: Path, name: str, root: Path, depth: int = 0) -> frozenset[str] | None:
    """The attributes class ``name`` of ``module`` has, its package bases' included;
    ``None`` when ``name`` is not a class (its attributes are not checked)."""
    if not name:
        return None
    tree = _tree(module)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None or depth > 10:
        return None
    members: set[str] = set()
    for item in cls.body:
        members |= _bound(item)
    # A base from another package (datafusion's CatalogProvider, Exception) is taken to
    # add nothing a page would name: pages document this package's own methods.
    for base in cls.bases:
        if isinstance(base, ast.Name):
            found = _definition(module, base.id, root)
            members |= (_members(*found, root, depth + 1) if found else None) or set()
    return frozenset(members)


@functools.cache
def _tree(module: Path) -> ast.Module:
    return ast.parse(module.read_text(), str(module))


@functools.cache
def _top_level(module: Path) -> tuple[frozenset[str], dict[str, tuple[list[str], str]]]:
    """The names ``module`` binds at its top level, and where each imported one comes from
    (the source module's dotted parts, the name there)."""
    tree = _tree(module)
    names: set[str] = set()
    imports: dict[str, tuple[list[str], str]] = {}
    package = (
        list(module.relative_to(ROOT).with_suffix("").parts) if module.is_relative_to(ROOT) else []
    )
    if package and package[-1] == "__init__":
        package = package[:-1]
    else:
        package = package[:-1]
    # Names bound under `if TYPE_CHECKING:` / try-except at the top level count too.
    nodes = list(tree.body)
    for node in tree.body:
        if isinstance(node, (ast.If, ast.Try)):
            nodes += [n for n in ast.walk(node) if isinstance(n, ast.stmt)]
    # A module-level __getattr__ that imports on first use (``DuckLakeCatalog``): the names
    # of __all__ it serves come from the modules it imports.
    lazy = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
    eager = set().union(*(_bound(n) for n in nodes))
    for function in lazy:
        for node in ast.walk(function):
            if not isinstance(node, ast.ImportFrom):
                continue
            nodes.append(node)  # `from .provider import DuckLakeCatalog`
            for alias in node.names:  # `from . import _catalog_provider`: getattr(it, name)
                for name in _all(tree) - eager - {a.asname or a.name for a in node.names}:
                    nodes.append(
                        ast.ImportFrom(
                            module=".".join(filter(None, [node.module, alias.name])),
                            names=[ast.alias(name=name)],
                            level=node.level,
                        )
                    )
    for node in nodes:
        names |= _bound(node)
        if isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").startswith(PACKAGE)
        ):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = base + (node.module.split(".") if node.module else [])
            for alias in node.names:
                imports[alias.asname or alias.name] = (source, alias.name)
    return frozenset(names), imports


def _all(tree: ast.Module) -> set[str]:
    """The names a module lists in ``__all__``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return {e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)}
    return set()


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
