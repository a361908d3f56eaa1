# Copyright 2026 The hf_xlsr Authors.
# SPDX-License-Identifier: Apache-2.0
"""The ``hf-xlsr`` commands, one module each (as transformers' ``commands``): ``train``, ``encode``, ``embed``,
``export``, ``evaluate``, ``mine``, ``push``, each with ``run(args, rest) -> int``, and ``common``, what several of
them share.

The options, ``--help`` and the dispatch live in ``hf_xlsr_cli``, a module outside the package: importing anything
in ``hf_xlsr`` imports torch and transformers (the package registers its model types with the Auto classes), which
takes seconds that ``hf-xlsr --help`` should not wait; it imports a command's module when the command runs. The
commands call the model loaders through their module (``loading.load_for_evaluation``), so that a test that replaces
a loader there reaches every command.
"""
