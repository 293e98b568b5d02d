"""Where the DBpedia sample and the bundled examples live.

The data stays outside the repository, in ``../shared/data`` beside the
checkout. ``RTF_DATA_DIR`` overrides it; it must point at the folder that
holds ``dbpedia/``.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "RTF_DATA_DIR"


def data_dir() -> Path:
    """The data folder: $RTF_DATA_DIR, else ../shared/data from the checkout or cwd."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    candidates = [Path(__file__).resolve().parents[2].parent / "shared" / "data",
                  Path.cwd().parent / "shared" / "data",
                  Path.cwd() / ".." / ".." / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return candidates[0]


def dbpedia_dir() -> Path:
    return data_dir() / "dbpedia"


def dbpedia_files() -> list[Path]:
    """The instance files of the sample (publications), in a stable order."""
    d = dbpedia_dir()
    return sorted(p for p in d.glob("*.nt.gz")) if d.is_dir() else []


def dbpedia_ontology() -> Path:
    return dbpedia_dir() / "ontology" / "dbpedia_2015-10.nt.gz"


def available() -> bool:
    return bool(dbpedia_files())


def examples_dir() -> Path:
    """The bundled example files (``examples/`` of a checkout, installed as ``rtf.examples``)."""
    from importlib import resources
    return Path(str(resources.files("rtf.examples")))


def missing_message() -> str:
    """What to tell a user (or a skipped test) when the sample is absent."""
    return f"DBpedia sample not found under {dbpedia_dir()} (set {ENV_VAR})"
