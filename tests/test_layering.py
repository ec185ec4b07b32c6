"""The tree's architecture, enforced: layers import only downward, the CLI is a leaf.

Every import statement of the package is read (AST, imports inside functions included)
and judged against the layer table below.  ``test_checker_catches_*`` prove the checker
fails on each kind of violation, so a green run means something.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: module prefix -> layer; a module may import its own layer and those below it.
LAYERS: dict[str, int] = {
    "rmqarrow.errors": 0,  # with every private root module (rmqarrow._name): the base
    "rmqarrow.format": 1,
    "rmqarrow.kernels": 2,
    "rmqarrow.index": 3,
    "rmqarrow.commitlog": 3,
    "rmqarrow.tiered": 3,
    "rmqarrow.rocksdb": 3,
    "rmqarrow.testing": 4,
    "rmqarrow.converters": 5,  # the package itself and schema
    "rmqarrow.converters.arrow": 5,
    # commits the parts the writers above write; readers above open its snapshots
    "rmqarrow.converters.delta": 5,
    "rmqarrow.converters.parquet": 6,
    "rmqarrow.converters.duckdb": 7,
    "rmqarrow.converters.spark": 7,
    # the index-health figures: the SQL reference over DuckDB, the streamed passes over parts
    "rmqarrow.converters.stats": 8,
    "rmqarrow.engines": 9,
    "rmqarrow.verify": 10,
    "rmqarrow.store": 11,
    "rmqarrow.demo": 12,
    "rmqarrow.cli": 13,
    "rmqarrow.__main__": 14,
}
#: an index format's own folder holds its whole stack: the package itself (its rules,
#: reader, writer and rebuild, private modules) is layer 3, and each public module named by
#: a concern takes that concern's layer, so a format's adapters import only downward too
FORMAT_FOLDERS = ("rmqarrow.tiered", "rmqarrow.rocksdb")
FORMAT_CONCERNS: dict[str, int] = {
    "layout": 1,  # the byte layout and file names, beside rmqarrow.format
    "arrow": 5,
    "parquet": 6,
    "duckdb": 7,
    "spark": 7,
    "verify": 10,
    "store": 11,
}
LAYERS.update({f"{f}.{c}": n for f in FORMAT_FOLDERS for c, n in FORMAT_CONCERNS.items()})
#: the package a format's module named by a concern extends: it builds on that package's
#: private modules as the package's own modules do (a format's store is a Store like theirs)
CONCERN_PACKAGES: dict[str, str] = {"store": "rmqarrow.store"}
#: two sides of one layer that never import each other: every DuckDB adapter, every Spark one
RIVALS = [
    (
        {"rmqarrow.converters.duckdb", *(f"{f}.duckdb" for f in FORMAT_FOLDERS)},
        {"rmqarrow.converters.spark", *(f"{f}.spark" for f in FORMAT_FOLDERS)},
    )
]
#: the API facade: re-exports from below, imported by nothing inside the package
FACADE = "rmqarrow"
#: packages whose ``__init__`` only names (lazily) what their submodules define
FACADES = {
    FACADE,
    "rmqarrow.converters",
    "rmqarrow.store",
    "rmqarrow.verify",
    "rmqarrow.commitlog",
    "rmqarrow.rocksdb",
    "rmqarrow.tiered",
    "rmqarrow.demo",
}
#: what the CLI may import besides itself: the package facades and the documented modules
#: (queries, times and Java numbers it parses; the text renderer, progress updates and
#: memory-limit wording it shows; what a location may be).  Everything else it reaches
#: through these, so the library does the work.
CLI_PUBLIC = {
    FACADE,
    "rmqarrow.store",
    "rmqarrow.verify",
    "rmqarrow.commitlog",
    "rmqarrow.tiered",
    "rmqarrow.rocksdb",
    "rmqarrow.converters",
    "rmqarrow.converters.duckdb",
    "rmqarrow.converters.spark",
    "rmqarrow.converters.stats",
    "rmqarrow.demo",
    "rmqarrow.engines",
    "rmqarrow.errors",
    "rmqarrow.format.queries",
    "rmqarrow.format.query_file",
    "rmqarrow.format.records",
    "rmqarrow.format.times",
    "rmqarrow.format.java",
    "rmqarrow.format.broker_config",
    "rmqarrow._text",
    "rmqarrow._progress",
    "rmqarrow._memory",
    "rmqarrow._paths",
}


def _cli_public(target: str) -> bool:
    """Whether ``target`` (a module, or module.name) is public API the CLI may use."""
    return target in CLI_PUBLIC or target.rsplit(".", 1)[0] in CLI_PUBLIC


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (or module.name)
    line: int


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "converters":
        parts = ["rmqarrow", *parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def edges_of(source: str, code: str, is_package: bool) -> list[Edge]:
    """Every import in ``code`` (the module ``source``), resolved to absolute names."""
    out = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            out += [Edge(source, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = source.split(".") if is_package else source.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out += [Edge(source, f"{module}.{a.name}", node.lineno) for a in node.names]
    return [e for e in out if e.target.split(".")[0] in ("rmqarrow", "converters")]


def package_edges() -> list[Edge]:
    edges = []
    for top in ("rmqarrow", "converters"):
        for path in sorted((ROOT / top).rglob("*.py")):
            edges += edges_of(module_name(path), path.read_text(), path.name == "__init__.py")
    return edges


def layer_of(module: str) -> tuple[str, int] | None:
    parts = module.split(".")
    private_root = len(parts) >= 2 and parts[0] == "rmqarrow" and parts[1].startswith("_")
    if private_root and not parts[1].startswith("__"):
        return "rmqarrow._base", 0
    best = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, layer)
    return best


def _private_owner(target: str) -> str | None:
    """For ``a.b._c.d``: ``a.b``, the package whose private module ``_c`` is; else None."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _extends(source: str, owner: str) -> bool:
    """Whether ``source`` is a format's module whose concern's package is ``owner``."""
    return any(
        source == f"{f}.{c}" or source.startswith(f"{f}.{c}.")
        for f in FORMAT_FOLDERS
        for c, package in CONCERN_PACKAGES.items()
        if package == owner
    )


def violations(edges: list[Edge]) -> list[str]:
    """What is wrong with these imports, one line each (empty: the architecture holds)."""
    found = []
    for e in edges:
        where = f"{e.source}:{e.line} imports {e.target}"
        if e.target.split(".")[0] == "converters":
            found.append(f"{where}: the package is rmqarrow.converters")
            continue
        if e.target.startswith("rmqarrow.cli") or e.target == "rmqarrow.__main__":
            if not e.source.startswith("rmqarrow.cli") and e.source != "rmqarrow.__main__":
                found.append(f"{where}: the CLI is a leaf; nothing imports it")
            continue
        if e.source in FACADES:
            continue
        if e.source.startswith("rmqarrow.cli") and not e.target.startswith("rmqarrow.cli"):
            if not _cli_public(e.target):
                found.append(
                    f"{where}: the CLI uses the public API only (package facades "
                    "and documented modules)"
                )
            continue
        if e.target.rsplit(".", 1)[0] == FACADE and layer_of(e.target) is None:
            found.append(f"{where}: import from the module that defines it, not the facade")
            continue
        owner = _private_owner(e.target)
        if (
            owner is not None
            and owner != FACADE
            and not (e.source == owner or e.source.startswith(owner + "."))
            and not _extends(e.source, owner)
        ):
            found.append(f"{where}: private to {owner}")
        src, dst = layer_of(e.source), layer_of(e.target)
        if src is None or dst is None:
            found.append(f"{where}: module not in the layer table")
            continue
        if dst[1] > src[1]:
            found.append(f"{where}: upward ({src[0]} is layer {src[1]}, {dst[0]} is {dst[1]})")
        for left, right in RIVALS:
            if (src[0] in left and dst[0] in right) or (src[0] in right and dst[0] in left):
                found.append(f"{where}: {src[0]} and {dst[0]} never import each other")
    return found


def test_every_import_points_down() -> None:
    edges = package_edges()
    assert len(edges) > 200, "the import reader found too little to judge"
    assert violations(edges) == []


def test_every_module_is_in_a_layer() -> None:
    for top in ("rmqarrow", "converters"):
        for path in (ROOT / top).rglob("*.py"):
            name = module_name(path)
            assert name == FACADE or layer_of(name) is not None, name


@pytest.mark.parametrize(
    ("source", "code", "expected"),
    [
        ("rmqarrow.format.layout", "from rmqarrow.index.indexfile import IndexFile", "upward"),
        ("rmqarrow.verify.run", "from rmqarrow.cli._output import print_table", "leaf"),
        ("rmqarrow.cli._info", "from rmqarrow.index.health import store_health", "public API"),
        ("rmqarrow.converters.duckdb.sql", "import rmqarrow.converters.spark.sql", "never"),
        ("rmqarrow.index.service", "from rmqarrow.kernels._numba import java_hashes", "private"),
        ("rmqarrow.verify.run", "from converters.parquet import export", "rmqarrow.converters"),
        ("rmqarrow.index.service", "from rmqarrow import IndexFile", "facade"),
        ("rmqarrow.kernels.put", "from ..index import build", "upward"),
        # inside a format's folder, each module is at the layer of its concern
        ("rmqarrow.tiered._open", "from rmqarrow.tiered.duckdb import answer", "upward"),
        ("rmqarrow.tiered.arrow", "from rmqarrow.tiered.parquet import export", "upward"),
        ("rmqarrow.rocksdb.duckdb", "from rmqarrow.tiered.spark import answer", "never"),
        ("rmqarrow.tiered.spark", "import rmqarrow.converters.duckdb.runner", "never"),
        # a format's store builds on the store package's private modules; nothing else does
        ("rmqarrow.tiered.verify", "from rmqarrow.verify._x import y", "private"),
        ("rmqarrow.rocksdb.store", "from rmqarrow.verify._run import x", "private"),
    ],
)
def test_checker_catches(source: str, code: str, expected: str) -> None:
    found = violations(edges_of(source, code, is_package=False))
    assert len(found) == 1 and expected in found[0], found


def test_a_format_store_builds_on_the_store_package() -> None:
    code = "from rmqarrow.store._base import Store\nfrom rmqarrow.store._kind import PinnedDataset"
    assert violations(edges_of("rmqarrow.rocksdb.store", code, is_package=False)) == []


def _printed_by(code: str) -> str:
    """What ``code`` prints, run in a fresh interpreter (so nothing is imported yet)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_import_rmqarrow_stays_light() -> None:
    code = (
        "import sys, rmqarrow, rmqarrow.commitlog, rmqarrow.tiered, rmqarrow.converters, "
        "rmqarrow.converters.duckdb, rmqarrow.converters.spark, rmqarrow.converters.stats\n"
        "heavy = ('duckdb', 'pyspark', 'numba', 'pyarrow.parquet', 'pyarrow.dataset')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    assert _printed_by(code) == "[]"


def test_a_subpackage_is_an_attribute_after_import_rmqarrow() -> None:
    code = (
        "import sys, rmqarrow\n"
        "print('rmqarrow.store' in sys.modules, callable(rmqarrow.store.capabilities))\n"
        "print(hasattr(rmqarrow, 'nothing'), hasattr(rmqarrow, '_nothing'))\n"
    )
    assert _printed_by(code).split() == ["False", "True", "False", "False"]


def test_bare_converters_is_not_importable() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import converters"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode != 0
    assert "import rmqarrow.converters" in done.stderr


def test_public_packages_curate_their_api() -> None:
    import importlib

    for name in (
        "rmqarrow",
        "rmqarrow.converters",
        "rmqarrow.converters.duckdb",
        "rmqarrow.converters.spark",
        "rmqarrow.commitlog",
        "rmqarrow.index",
        "rmqarrow.verify",
        "rmqarrow.testing",
        "rmqarrow.tiered",
    ):
        module = importlib.import_module(name)
        assert module.__doc__, name
        public = module.__all__
        assert public and len(set(public)) == len(public), name
        for attr in public:
            assert getattr(module, attr) is not None, f"{name}.{attr}"


#: the folder table of the architecture page, which states the layers above in prose
ARCHITECTURE = ROOT / "docs" / "architecture.md"
TABLE_HEADER = "| folder | layer | what it holds |"
#: the layer of ``errors`` and of every private root module: the row of ``rmqarrow/``
BASE = ("rmqarrow._base", 0)


def _path_of(module: str) -> str:
    """``rmqarrow.converters.arrow`` -> ``converters/arrow/``; a module -> its ``.py``."""
    parts = module.split(".")
    if parts[:2] == ["rmqarrow", "converters"]:
        parts = parts[1:]
    rel = "/".join(parts)
    return f"{rel}/" if (ROOT / rel).is_dir() else f"{rel}.py"


def _module_of(path: str) -> str:
    """``converters/arrow/`` -> ``rmqarrow.converters.arrow``; the inverse of _path_of."""
    parts = path.removesuffix(".py").strip("/").split("/")
    return ".".join(["rmqarrow", *parts] if parts[0] == "converters" else parts)


def table_rows(text: str) -> dict[str, str]:
    """The folder table's rows: the path named first in a row (in backticks) -> its layer."""
    lines = text.split(TABLE_HEADER, 1)[1].strip().splitlines()
    rows: dict[str, str] = {}
    for line in lines[1:]:  # the separator row first
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        found = re.match(r"`([^`]+)`", cells[0])
        rows[found.group(1) if found else cells[0]] = cells[1]
    return rows


def table_problems(text: str) -> list[str]:
    """How the architecture page's folder table differs from the layer map, one line each."""
    if TABLE_HEADER not in text:
        return [f"{ARCHITECTURE.name} has no table headed {TABLE_HEADER!r}"]
    rows = table_rows(text)
    problems = []
    # every folder of the map, every module of its own layer, and the root modules (base)
    wanted = {
        p
        for m, n in LAYERS.items()
        if ((p := _path_of(m)).endswith("/") or n != BASE[1]) and not _format_concern(m)
    }
    wanted.add("rmqarrow/")
    # a subpackage of rmqarrow/ or converters/ that the map covers only by its prefix
    for top in ("rmqarrow", "converters"):
        wanted |= {
            f"{p.parent.relative_to(ROOT)}/" for p in sorted((ROOT / top).glob("*/__init__.py"))
        }
    for path in sorted(wanted - rows.keys()):
        problems.append(f"`{path}` has no row in the folder table")
    for path, layer in rows.items():
        if not (ROOT / path).exists():
            problems.append(f"`{path}` is in the folder table but does not exist")
            continue
        expected = BASE if path == "rmqarrow/" else layer_of(_module_of(path))
        if expected is None:
            problems.append(f"`{path}` is in the folder table but not in the layer map")
        elif layer != str(expected[1]):
            problems.append(
                f"`{path}` is layer {layer!r} in the folder table, {expected[1]} in the map"
            )
    return problems + concern_problems(text)


def _format_concern(module: str) -> bool:
    """Whether ``module`` is a format folder's module named by a concern (its own table)."""
    folder, _, concern = module.rpartition(".")
    return folder in FORMAT_FOLDERS and concern in FORMAT_CONCERNS


#: the table of a format folder's modules by concern, which states FORMAT_CONCERNS in prose
CONCERN_HEADER = "| a format's module | layer | what it holds |"


def concern_problems(text: str) -> list[str]:
    """How the architecture page's table of a format's modules differs from the map."""
    if CONCERN_HEADER not in text:
        return [f"{ARCHITECTURE.name} has no table headed {CONCERN_HEADER!r}"]
    rows = {
        name.removesuffix(".py").removesuffix("/"): layer
        for name, layer in table_rows(TABLE_HEADER + text.split(CONCERN_HEADER, 1)[1]).items()
    }
    problems = [
        f"`{c}` has no row in the table of a format's modules"
        for c in FORMAT_CONCERNS
        if c not in rows
    ]
    for concern, layer in rows.items():
        if concern not in FORMAT_CONCERNS:
            problems.append(f"`{concern}` is in the table of a format's modules, not the map")
        elif layer != str(FORMAT_CONCERNS[concern]):
            problems.append(
                f"`{concern}` is layer {layer!r} in the table of a format's modules, "
                f"{FORMAT_CONCERNS[concern]} in the map"
            )
    return problems


def test_architecture_table_matches_the_layer_map() -> None:
    assert table_problems(ARCHITECTURE.read_text()) == []


def _drop_row(path: str) -> Callable[[str], str]:
    return lambda text: re.sub(rf"\n\| `{re.escape(path)}` [^\n]*", "", text)


def _swap(old: str, new: str) -> Callable[[str], str]:
    return lambda text: text.replace(old, new)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        pytest.param(_drop_row("rmqarrow/store/"), "store/` has no row", id="no-row"),
        pytest.param(_drop_row("rmqarrow/engines.py"), "engines.py` has no row", id="no-module"),
        pytest.param(
            _swap("| `rmqarrow/kernels/` | 2 |", "| `rmqarrow/kernels/` | 3 |"),
            "layer '3' in the folder table, 2 in the map",
            id="wrong-layer",
        ),
        pytest.param(
            _swap("| `rmqarrow/demo/` |", "| `rmqarrow/gone/` | 11 | x |\n| `rmqarrow/demo/` |"),
            "gone/` is in the folder table but does not exist",
            id="no-folder",
        ),
        pytest.param(
            _swap("| `rmqarrow/demo/` |", "| `rmqarrow/_text.py` | 0 | x |\n| `rmqarrow/demo/` |"),
            "",
            id="a-root-module-row-is-allowed",
        ),
        pytest.param(_swap(TABLE_HEADER, "| folder | what |"), "no table", id="no-table"),
        pytest.param(
            _swap("| `duckdb` | 7 |", "| `duckdb` | 6 |"),
            "`duckdb` is layer '6' in the table of a format's modules, 7 in the map",
            id="concern-wrong-layer",
        ),
        pytest.param(
            _swap("| `spark` | 7 |", "| `sparky` | 7 | x |\n| `spark` | 7 |"),
            "`sparky` is in the table of a format's modules, not the map",
            id="concern-unknown",
        ),
    ],
)
def test_table_checker_catches(edit: Callable[[str], str], expected: str) -> None:
    found = table_problems(edit(ARCHITECTURE.read_text()))
    if not expected:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


#: What an import inside a function may name (every other import is at module top, so the
#: module's dependencies show where it starts): the optional engines, loaded when a feature
#: first asks for one, and the modules that exist to wrap them.  A module name here covers
#: its submodules.  Each entry says why it must not load with the module importing it.
LAZY_IMPORTS: dict[str, str] = {
    "numba": "optional (the fast extra); the kernels run their numpy form without it",
    "pyspark": "optional (the spark extra); its absence is an error naming the extra",
    "py4j": "comes with pyspark, so as optional as it is",
    "matplotlib": "optional (the plot extra)",
    "duckdb": "an engine asked for by name; import rmqarrow and the CLI do not load it",
    "deltalake": (
        "its native library is large: under a tight ulimit -v it cannot be mapped, and "
        "commands on native stores must still run (tests/cli/test_cli_sql_engines.py)"
    ),
    "readline": "importing it changes how input() edits a line: only the sql prompt wants it",
    "resource": "POSIX only; where it is missing, no limit is the answer (in a try)",
    "rmqarrow.converters.duckdb": "the DuckDB engine: loads duckdb",
    "rmqarrow.converters.spark": "the Spark engine: loads pyspark and starts a JVM",
    "rmqarrow.converters.delta.run": "the Delta engine: loads deltalake (see deltalake)",
    "rmqarrow.converters.stats": "the figures are DuckDB's (and matplotlib's charts)",
    # a format's engine modules, as the engine packages above
    **{f"{f}.duckdb": "its DuckDB engine: loads duckdb" for f in FORMAT_FOLDERS},
    **{f"{f}.spark": "its Spark engine: loads pyspark and starts a JVM" for f in FORMAT_FOLDERS},
}
#: Engine modules that import their engine at load (pyspark's data source classes are
#: their base classes): within their own engine package too, the others reach them in
#: functions, and the three data source modules reach each other so.
ENGINE_AT_LOAD: set[str] = {
    "rmqarrow.converters.spark.commitlog",
    "rmqarrow.converters.spark.source",
    "rmqarrow.converters.spark.streaming",
    "rmqarrow.converters.spark.records",
    "rmqarrow.converters.spark.messages_export",
}
#: (importing module, imported package) -> why that module alone keeps it in a function
LAZY_BOUNDARIES: dict[tuple[str, str], str] = {
    ("rmqarrow._paths", "pyarrow"): (
        "the CLI imports _paths before fit_allocators sizes pyarrow's memory pool, which "
        "pyarrow reads once as it starts; one helper, _pyarrow_fs, is the boundary"
    ),
    # the command line's parser loads no engine, so --help and a mistyped option are quick
    ("rmqarrow.cli._show", "rmqarrow.cli._render"): (
        "the renderers are keyed by the library's result types: they load with a result"
    ),
    ("rmqarrow.cli._show", "rmqarrow.cli._render_query"): (
        "the renderers are keyed by the library's result types: they load with a result"
    ),
    ("rmqarrow.cli._sql", "pyarrow"): "the prompt's .tables listing, built when asked for",
}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def function_imports(source: str, code: str, is_package: bool) -> list[tuple[int, str, str]]:
    """Each import statement inside a function of ``code``: (line, imported module
    resolved to an absolute name, the statement)."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, ast.unparse(child)) for a in child.names)
            elif in_function and isinstance(child, ast.ImportFrom):
                module = child.module or ""
                if child.level:
                    base = source.split(".") if is_package else source.split(".")[:-1]
                    base = base[: len(base) - child.level + 1]
                    module = ".".join(base + ([module] if module else []))
                found.append((child.lineno, module, ast.unparse(child)))
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(code), False)
    return found


def lazy_problems(source: str, code: str, is_package: bool) -> list[str]:
    """The imports inside functions of ``code`` that belong at module top, one line each."""
    if source in FACADES:  # a facade's __getattr__ imports what it names, on first use
        return []
    problems = []
    for line, target, statement in function_imports(source, code, is_package):
        where = f"{source}:{line}: {statement!r} inside a function"
        engine = next((p for p in LAZY_IMPORTS if _within(target, p)), None)
        if engine is not None and engine.startswith("rmqarrow."):
            own = engine.rsplit(".", 1)[0] if engine.count(".") > 2 else engine
            if _within(source, own) and target not in ENGINE_AT_LOAD:
                engine = None  # an engine's modules import each other at top
        boundary = any(source == s and _within(target, p) for s, p in LAZY_BOUNDARIES)
        if engine is not None or boundary:
            continue
        if target.split(".")[0] in ("rmqarrow", "converters"):
            problems.append(
                f"{where}: an rmqarrow import, at module top (break a cycle by "
                "moving the shared piece down a layer)"
            )
        else:
            problems.append(f"{where}: not an optional engine of LAZY_IMPORTS; at module top")
    return problems


def test_imports_are_at_module_top() -> None:
    problems = []
    for top in ("rmqarrow", "converters"):
        for path in sorted((ROOT / top).rglob("*.py")):
            problems += lazy_problems(
                module_name(path), path.read_text(), path.name == "__init__.py"
            )
    assert problems == []


@pytest.mark.parametrize(
    ("source", "code", "expected"),
    [
        ("rmqarrow.index.service", "from rmqarrow.index import build\n", ""),
        ("rmqarrow.index.service", "def f():\n    from rmqarrow.index import build\n", "rmqarrow"),
        ("rmqarrow.index.service", "def f():\n    from . import build\n", "rmqarrow"),
        ("rmqarrow.index.service", "class C:\n    def f(self):\n        import json\n", "engine"),
        ("rmqarrow.index.service", "def f():\n    def g():\n        import pyarrow\n", "engine"),
        ("rmqarrow.store._x", "def f():\n    import duckdb\n", ""),
        ("rmqarrow.store._x", "def f():\n    from rmqarrow.converters.duckdb import sql\n", ""),
        (
            "rmqarrow.store._x",
            "def f():\n    from rmqarrow.converters.delta.run import vacuum\n",
            "",
        ),
        (
            "rmqarrow.converters.spark.sql",
            "def f():\n    from .session import get_spark\n",
            "rmqarrow",
        ),
        ("rmqarrow.converters.spark.sql", "def f():\n    from .source import register\n", ""),
        (
            "rmqarrow.converters.duckdb.sql",
            "def f():\n    from .stats import collect\n",
            "rmqarrow",
        ),
        ("rmqarrow._paths", "def f():\n    from pyarrow import fs\n", ""),
        ("rmqarrow._text", "def f():\n    from pyarrow import fs\n", "engine"),
        ("rmqarrow", "def __getattr__(name):\n    from rmqarrow.store import open_store\n", ""),
    ],
)
def test_lazy_checker_catches(source: str, code: str, expected: str) -> None:
    found = lazy_problems(source, code, is_package=False)
    if not expected:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


def test_cli_loads_no_pyarrow_before_sizing_its_allocator() -> None:
    """``rmqarrow.cli`` and what it imports at top run before ``main`` calls
    :func:`rmqarrow._memory.fit_allocators`; pyarrow reads its pool choice once, as it
    loads, so it must not load with them (the commands' modules load after)."""
    code = "import sys, rmqarrow.cli\nprint([m for m in sys.modules if m.startswith('pyarrow')])\n"
    assert _printed_by(code) == "[]"


def test_the_command_line_parser_loads_no_engine() -> None:
    """``rmqarrow --help``, a mistyped option and completion build every command's parser:
    that loads neither numpy, pyarrow nor an engine (the commands load them as they run)."""
    code = (
        "import sys\nfrom rmqarrow.cli import build_parser\nbuild_parser()\n"
        "heavy = ('numpy', 'pyarrow', 'duckdb', 'pyspark', 'deltalake', 'numba')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    assert _printed_by(code) == "[]"
