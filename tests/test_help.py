"""`rtf COMMAND --help` teaches (issue 26 item 6): every option of every command has a help
text, every command shows examples, and the exit tables name every status rtf exits with."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from rtf.bench.inputs import EXIT_MISMATCH
from rtf.cli import build_parser
from rtf.cli.arguments import EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[1]
EXITS = {0, EXIT_INPUT, EXIT_USAGE, EXIT_MISMATCH, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED}


def commands(parser: argparse.ArgumentParser, prefix: str = "rtf"):
    """(name, parser) of every command and subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from commands(sub, f"{prefix} {name}")


COMMANDS = dict(commands(build_parser()))


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_a_help_text(name):
    parser = COMMANDS[name]
    missing = [a.option_strings or a.dest for a in parser._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert not missing, f"{name}: no help for {missing}"


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "rtf index"])
def test_every_command_shows_examples(name):
    text = COMMANDS[name].format_help()
    assert re.search(r"^ +" + re.escape(name) + r"( |$)", text, re.M), text  # an example command line


def test_the_exit_tables_name_every_status():
    help_text = build_parser().format_help()
    listed = {int(code) for code in re.findall(r"^  (\d+) ", help_text[help_text.index("exit status"):], re.M)}
    assert listed == EXITS
    limits = (ROOT / "docs" / "limits.md").read_text()
    table = limits[limits.index("Exit statuses"):]
    assert {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)} == EXITS
