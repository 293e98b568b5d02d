"""The examples in the documentation and docstrings run and say what they show."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["rtf.parser", "rtf.engine", "rtf.text", "rtf.expressions", "rtf.publication",
           "rtf.terms", "rtf.decompose", "rtf.taxonomy", "rtf.reader", "rtf.values",
           "rtf.arguments", "rtf.workload"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS)
    assert result.failed == 0


@pytest.mark.parametrize("page", ["docs/language.md"])
def test_documentation_examples(page):
    result = doctest.testfile(str(ROOT / page), module_relative=False, optionflags=FLAGS)
    assert result.failed == 0 and result.attempted > 0
