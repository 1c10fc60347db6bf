"""The README and the docs site stay true: links, code references and the quickstart.

The site itself is built by ``make docs`` (``mkdocs build --strict``: links, anchors and
code references between pages, ``docs/hooks/coderefs.py``). README.md lies outside the
site, so its links and code references are checked here, with the same checker, and the
pages' code references once more (``make test`` runs without the docs build's venv).
README's DataFusion quickstart, its SQL and its pandas/Polars snippet are run for real
against a lake shaped like ``make demo``'s, written by the reference writer, and every
answer is compared with DuckDB's.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
from pathlib import Path

import pyarrow as pa
import pytest
from support.lakes import assert_same_rows

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 300


def _coderefs():
    spec = importlib.util.spec_from_file_location("coderefs", DOCS / "hooks" / "coderefs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def _anchors(markdown: str) -> set[str]:
    """Heading anchors as mkdocs' toc and GitHub spell them (lower case, punctuation out)."""
    anchors = set()
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            slug = re.sub(r"[^\w\- ]", "", title).strip().replace(" ", "-")
            anchors.add(slug)
    return anchors


def test_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move depth to docs/"


def test_readme_links_resolve() -> None:
    text = README.read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link for link in links if not re.match(r"^[a-z]+://", link)]
    assert local, "README.md links no docs page"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else README
        assert target.exists(), f"README.md links {link}: no such file"
        if anchor:
            assert target.suffix == ".md", link
            assert anchor in _anchors(target.read_text()), f"README.md links {link}: no such anchor"


def test_every_page_is_in_the_site() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages == set(re.findall(r":\s+([\w-]+\.md)\s*$", nav, re.MULTILINE))


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_code_references_exist(page: Path) -> None:
    assert _coderefs().check_markdown(page.read_text(), ROOT) == []


def test_code_reference_check_catches_rot() -> None:
    """The checker must flag names that do not exist, or it asserts nothing."""
    text = (
        "`ducklake_datafusion.scan.ScanPlan` `ducklake_datafusion.scan.NoSuchPlan` "
        "`provider/_no_such_module.py` `tests/test_docs.py::test_no_such_test` "
        "`tests/test_docs.py::test_readme_is_short` `provider/_gone.py` (removed)\n"
        "`DuckLakeCatalog.forget_metadata()` `DuckLakeTable.scan_plan` `DuckLakeTable.no_such`\n"
        "```python\nfrom ducklake_datafusion.spark import read_table, no_such_reader\n```\n"
    )
    problems = _coderefs().check_markdown(text, ROOT)
    flagged = [p.split("`")[1] for p in problems]
    assert flagged == [
        "ducklake_datafusion.scan.NoSuchPlan",
        "provider/_no_such_module.py",
        "tests/test_docs.py::test_no_such_test",
        "DuckLakeTable.no_such",
        "ducklake_datafusion.spark.no_such_reader",
    ]


@pytest.fixture
def demo_lake(make_lake):
    """A lake with ``make demo``'s history (examples/demo.py), by the reference writer."""
    lake = make_lake()
    lake.sql(
        "CREATE TABLE lake.main.orders (id BIGINT, region VARCHAR, day DATE, amount DECIMAL(10,2))"
    )
    lake.sql(
        "INSERT INTO lake.main.orders SELECT i, ['north','south','east','west'][i % 4 + 1], "
        "DATE '2024-01-01' + (i % 60)::INTEGER, (i % 997) / 10 FROM range(20000) r(i)"
    )
    lake.sql("DELETE FROM lake.main.orders WHERE id % 10 = 0")
    lake.sql("INSERT INTO lake.main.orders VALUES (1000000, 'north', DATE '2024-03-01', 5.00)")
    lake.sql("ALTER TABLE lake.main.orders RENAME COLUMN amount TO total")
    lake.detach()
    return lake


def _run(code: str, namespace: dict) -> list:
    """Execute ``code`` statement by statement; the values of its expression statements."""
    values = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr):
            values.append(eval(compile(ast.Expression(node.value), "<README>", "eval"), namespace))
        else:
            exec(compile(ast.Module([node], []), "<README>", "exec"), namespace)  # noqa: S102
    return values


def test_readme_datafusion_quickstart_runs(demo_lake, monkeypatch) -> None:
    quickstart, dataframes = _blocks(README.read_text(), "python")[:2]
    assert "demo_lake/lake.ducklake" in quickstart
    code = quickstart.replace("demo_lake/lake.ducklake", demo_lake.metadata)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        _run(code, namespace)
    assert "north" in shown.getvalue()
    # The quickstart's query, asked again, against DuckDB's answer.
    call = next(
        node
        for node in ast.walk(ast.parse(quickstart))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "sql"
    )
    sql = ast.literal_eval(call.args[0])
    ctx = namespace["ctx"]
    assert_same_rows(ctx.sql(sql).to_arrow_table(), demo_lake.reference(sql), ordered=True)

    # The time-travel, change-feed and metadata SQL (a time literal depends on when the
    # lake was written: those lines are left out).
    (statements,) = [
        b for b in _blocks(README.read_text(), "sql") if "ducklake_table_changes('lake'" in b
    ]
    for line in statements.splitlines():
        query = line.split("--")[0].strip().rstrip(";")
        if not query or re.search(r"@\d{4}-", query):
            continue
        got = ctx.sql(query).to_arrow_table()
        expected = demo_lake.reference(query.replace('"orders@v2"', "orders AT (VERSION => 2)"))
        assert got.num_rows > 0, query
        # column names of an aggregate are each engine's own (count(*) / count_star())
        assert_same_rows(got, expected.rename_columns(got.column_names))

    # pandas and Polars, on the same lake.
    values = _run(dataframes, namespace)
    arrow, frame, polars_frame, grouped = values
    columns = "SELECT id, total FROM lake.main.orders"
    assert_same_rows(arrow, demo_lake.reference(columns))
    assert_same_rows(
        pa.Table.from_pandas(frame, preserve_index=False), demo_lake.reference(columns)
    )
    assert (
        polars_frame.height
        == demo_lake.reference("SELECT count(*) FROM lake.main.orders WHERE id > 100")
        .column(0)[0]
        .as_py()
    )
    want = demo_lake.reference(
        "SELECT region, count(*) AS len FROM lake.main.orders WHERE day >= DATE '2024-02-01' GROUP BY region"
    )
    got = grouped.to_arrow().cast(pa.schema([("region", pa.string()), ("len", pa.int64())]))
    assert_same_rows(got, want.cast(got.schema))
