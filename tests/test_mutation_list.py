"""``tests/mutations.py`` stays runnable: every break names a line its file holds exactly once, and a test that
exists, so a refactor that moves or rewrites a guarded line shows here, not only when the mutations next run."""

from __future__ import annotations

from pathlib import Path

from mutations import MUTATIONS

ROOT = Path(__file__).resolve().parents[1]


def test_every_mutation_finds_its_line_once_and_names_a_test_that_exists():
    stale = []
    for mutation in MUTATIONS:
        count = (ROOT / mutation.file).read_text().count(mutation.before)
        test_file, _, name = mutation.test.partition("::")
        if count != 1 or f"def {name.split('[')[0]}(" not in (ROOT / test_file).read_text():
            stale.append(f"{mutation.name}: the line appears {count} times, or {mutation.test} does not exist")
    assert not stale, stale
    assert len({mutation.name for mutation in MUTATIONS}) == len(MUTATIONS)
