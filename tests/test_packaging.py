"""What `pip install .` installs: every folder of the package, its data, its commands.

The package list of pyproject.toml is written out by hand (the grammar and the
examples are installed from top-level folders through ``package-dir``), so a
new folder under rtf/ is installed only once it is listed. An editable install
(``pip install -e``) finds every folder anyway, which hides a missing one from
every other test: ``rtf.algebra`` was missing, and a regular install could not
parse a query (``No module named 'rtf.algebra'``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _package_folders() -> set[str]:
    """The dotted names of the folders of rtf/ that hold Python modules."""
    folders = {path.parent for path in (ROOT / "rtf").rglob("*.py") if "__pycache__" not in path.parts}
    return {".".join(folder.relative_to(ROOT).parts) for folder in folders}


def test_every_folder_of_the_package_is_installed():
    listed = set(CONFIG["tool"]["setuptools"]["packages"])
    assert _package_folders() - listed == set()


def test_the_listed_packages_exist():
    mapped = CONFIG["tool"]["setuptools"]["package-dir"]
    for name in CONFIG["tool"]["setuptools"]["packages"]:
        prefix = max((p for p in mapped if name == p or name.startswith(p + ".")), key=len)
        folder = ROOT / mapped[prefix] / Path(*name.split(".")[len(prefix.split(".")):])
        assert folder.is_dir(), name


def test_the_rtf_command_is_installed():
    """``rtf`` (and with it ``rtf spark ...``) is the one console command."""
    assert CONFIG["project"]["scripts"] == {"rtf": "rtf.cli:main"}
