"""``tests/mutations.py`` stays runnable: every break finds its code once in its function, whatever the layout, and
names a test that exists. The whole list's check is slow (it reads and tokenizes every guarded file); the matcher's
own test is not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from mutations import MUTATIONS, Mutation, StaleMutation, mutate

ROOT = Path(__file__).resolve().parents[1]

SOURCE = '''def scale(x, factor):
    """Multiply (x * factor) unless told otherwise."""
    return clamp(x * factor, low=0)


def other(x, factor):
    return clamp(x * factor, low=1)
'''

# the same code as ruff would lay it out at a narrow line length, a comment added
REFORMATTED = '''def scale(x, factor):
    """Multiply (x * factor) unless told otherwise."""
    return clamp(
        x * factor,  # the product
        low=0,
    )


def other(x, factor):
    return clamp(x * factor, low=1)
'''


def test_a_mutation_finds_its_code_in_its_function_whatever_the_layout():
    mutation = Mutation("drop_factor", "f.py::scale", "clamp(x * factor, low=0)", "clamp(x, low=0)", "t.py::t")
    assert mutate(SOURCE, mutation) == SOURCE.replace("clamp(x * factor, low=0)", "clamp(x, low=0)")
    mutated = mutate(REFORMATTED, mutation)
    assert "return clamp(x, low=0)\n" in mutated and mutated.count("x * factor") == 2  # the docstring's and other's
    ast.parse(mutated)
    # in its function only: the same code in another function is not the one broken, nor counted
    assert "low=1" in mutate(SOURCE, Mutation("m", "f.py::scale", "x * factor", "x", "t.py::t"))
    # a fragment of a docstring matches as words, with any whitespace between them
    words = mutate(SOURCE, Mutation("doc", "f.py::scale", "unless  told\n otherwise", "always", "t.py::t"))
    assert '"""Multiply (x * factor) always."""' in words
    with pytest.raises(StaleMutation, match="f.py::other holds its code 0 times, not once"):
        mutate(SOURCE, Mutation("gone", "f.py::other", "low=0", "low=2", "t.py::t"))
    with pytest.raises(StaleMutation, match="f.py: no missing"):
        mutate(SOURCE, Mutation("gone", "f.py::missing", "low=0", "low=2", "t.py::t"))


@pytest.mark.slow
def test_every_mutation_finds_its_code_once_and_names_a_test_that_exists():
    stale = []
    for mutation in MUTATIONS:
        source = (ROOT / mutation.file).read_text()
        try:
            mutated = mutate(source, mutation)
        except StaleMutation as error:
            stale.append(str(error))
            continue
        if mutation.file.endswith(".py"):
            try:
                ast.parse(mutated)
            except SyntaxError as error:
                stale.append(f"{mutation.name}: the broken file does not parse: {error}")
        test_file, _, name = mutation.test.partition("::")
        if f"def {name.split('[')[0]}(" not in (ROOT / test_file).read_text():
            stale.append(f"{mutation.name}: {mutation.test} does not exist")
    assert not stale, stale
    assert len({mutation.name for mutation in MUTATIONS}) == len(MUTATIONS)
