"""The package's layout: no import cycle between hf_xlsr's modules, function-level imports included; the formatter
lays out the code (``# fmt: skip`` on literal tables only)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hf_xlsr"
BENCHMARKS = PACKAGE.parent / "benchmarks"  # its scripts import each other by their names from that folder


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(source: Path = PACKAGE, root: Path = PACKAGE.parent) -> dict[str, set[str]]:
    """Each module under ``source`` (named from ``root``) and the modules of it it imports anywhere in its text (a
    package counts as its ``__init__``; ``from package import name`` imports the submodule ``name`` when there is
    one)."""
    modules = {module_name(path, root): path for path in source.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                continue
            imported |= {c for c in candidates if c in modules and c != name}
        graph[name] = imported
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_hf_xlsr_modules():
    graph = import_graph()
    assert "hf_xlsr.evaluation.mining.search" in graph["hf_xlsr.evaluation.mining.margin"]  # the walk sees imports
    assert cycles(graph) == []


def test_no_import_circle_between_the_benchmarks_scripts_and_their_report():
    graph = import_graph(BENCHMARKS, BENCHMARKS)
    assert "mining_arms" in graph["report.mining_scale"]  # the walk sees imports, relative ones included
    assert "shared" not in graph["report.mining_scale"] and "report.shared" in graph["report.mining_scale"]
    assert cycles(graph) == []


READERS = {"compare", "readme_tables"}  # scripts with an entry point that read results files, measuring nothing


def test_the_report_reads_results_files_and_imports_no_measuring_script():
    """A report module reaches, through every import, only the arms' definitions, the protocol and the shared
    helpers: no script that measures (one with an entry point that runs arms, a fault test or a corpus build)."""
    graph = import_graph(BENCHMARKS, BENCHMARKS)
    measuring = {
        name
        for name in graph
        if (BENCHMARKS / f"{name}.py").is_file()
        and name not in READERS
        and "__main__" in (BENCHMARKS / f"{name}.py").read_text()
    }
    assert {"multilingual_grid", "reliability", "catalogue_corpus", "tatoeba", "bench_memory"} <= measuring
    for name in (module for module in graph if module.startswith("report")):
        reached, frontier = set(), set(graph[name])
        while frontier:
            module = frontier.pop()
            reached.add(module)
            frontier |= graph[module] - reached
        assert not reached & measuring, (name, sorted(reached & measuring))


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_ruff_lays_out_and_checks_the_code():
    """``ruff format --check`` and ``ruff check`` pass on the whole tree (the settings in pyproject.toml)."""
    import subprocess
    import sys

    root = PACKAGE.parent
    for command in (["format", "--check", "."], ["check", "."]):
        result = subprocess.run([sys.executable, "-m", "ruff", *command], cwd=root, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def skipped_layouts(source: str) -> list[int]:
    """The lines of ``source`` that end with ``# fmt: skip`` and do not close an assignment of a literal table (a
    dict, list, tuple or set): the formatter's layout is skipped only where a table reads better by hand."""
    tables = {
        node.end_lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Dict | ast.List | ast.Tuple | ast.Set)
    }
    return [
        number
        for number, line in enumerate(source.splitlines(), 1)
        if line.rstrip().endswith("# fmt: skip") and number not in tables
    ]


def test_the_formatters_layout_is_skipped_on_literal_tables_only():
    assert skipped_layouts('TABLE = {"a": 1,\n         "bb": 2}  # fmt: skip\nx = f(1,\n      2)  # fmt: skip\n') == [
        4
    ]
    root = PACKAGE.parent
    files = [
        path
        for folder in ("hf_xlsr", "benchmarks", "tests", "tools", "examples")
        for path in (root / folder).rglob("*.py")
    ]
    found = {
        str(path.relative_to(root)): lines
        for path in [*files, root / "hf_xlsr_cli.py"]
        if (lines := skipped_layouts(path.read_text()))
    }
    assert found == {}


def test_every_configuration_field_is_documented_where_help_and_the_api_page_show_it():
    """As transformers' configurations do, each field is documented in the class docstring with its type and default
    (``Attributes:``); ``help()`` and the API page show the docstring, not comments beside the fields."""
    import dataclasses
    import re

    import hf_xlsr

    configurations = [hf_xlsr.DualMomentumConfig, hf_xlsr.HictlConfig, hf_xlsr.CmlmConfig,
                      hf_xlsr.LightweightDualTransformerConfig, hf_xlsr.HictlTranslationConfig]  # fmt: skip
    for configuration in configurations:
        own = [f.name for f in dataclasses.fields(configuration) if f.name in configuration.__annotations__]
        documented = re.findall(r"^        (\w+) \(`", configuration.__doc__, re.MULTILINE)
        assert own and documented == own, (configuration.__name__, set(own) ^ set(documented))
        assert "defaults to `" in configuration.__doc__


def test_every_source_file_opens_with_its_licence():
    header = "# Copyright 2026 The hf_xlsr Authors.\n# SPDX-License-Identifier: Apache-2.0\n"
    files = [*PACKAGE.rglob("*.py"), PACKAGE.parent / "hf_xlsr_cli.py"]
    assert [str(path) for path in files if not path.read_text().startswith(header)] == []


def test_the_export_imports_nothing_of_the_evaluation_package():
    """The arrows point one way: evaluation reads exports (``routes``, ``MTEB_META``), the export never reads
    evaluation; the language codes both need live in ``hf_xlsr.languages``."""
    import subprocess
    import sys

    code = "import sys, hf_xlsr.export; print(sorted(m for m in sys.modules if m.startswith('hf_xlsr.evaluation')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr[-2000:]
