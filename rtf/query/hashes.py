"""Hash functions (SPARQL 1.1 §17.4.6): MD5, SHA1, SHA256, SHA384, SHA512.

Each takes a simple literal (or an xsd:string, the same term in RDF 1.1)
and returns the lower-case hex digest of its UTF-8 bytes as a simple
literal. A language-tagged literal, like any other term, is an error.

>>> FUNCTIONS["md5"]('"abc"')
'"900150983cd24fb0d6963f7d28e17f72"'
"""

from __future__ import annotations

import hashlib

from rtf.query.literals import simple_lexical
from rtf.query.values import ERROR

__all__ = ["FUNCTIONS"]


def _digest(algorithm: str):
    constructor = getattr(hashlib, algorithm)

    def digest(key):
        text = simple_lexical(key)
        if text is None:
            return ERROR
        # surrogatepass: a lone surrogate cannot reach a key, but hashing must never raise
        return f'"{constructor(text.encode("utf-8", "surrogatepass")).hexdigest()}"'
    return digest


FUNCTIONS = {name: _digest(name) for name in ("md5", "sha1", "sha256", "sha384", "sha512")}
