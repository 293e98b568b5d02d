"""A query's metadata: JSON values only, checked when the query is registered,
kept as a deep read-only copy.

What a caller attaches to a query (for ``rtf match``, the extra fields of a
JSON Lines record; for ``rtf serve``, the request's ``metadata``) is saved in
index files and shipped to Spark executors, so it must be JSON: `frozen`
refuses anything else at once, with the path of the bad value, instead of a
failure at `save()` time. The copy it returns is a `Metadata`, a ``dict``
that cannot be changed, whose lists and objects cannot be changed either:
``json.dumps`` takes it as it is, ``==`` compares it with plain dicts and
lists, pickling keeps it read-only, and ``copy.deepcopy(m)`` gives plain
dicts and lists to change (``dict(m)`` too, but its nested values stay
read-only).

>>> m = frozen({"topic": "sport", "tags": ["rio", "2016"]})
>>> m == {"topic": "sport", "tags": ["rio", "2016"]}, json.dumps(m)
(True, '{"topic": "sport", "tags": ["rio", "2016"]}')
>>> m["tags"].append("x")
Traceback (most recent call last):
  ...
TypeError: query metadata is read-only (copy it with copy.deepcopy to change it)
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

__all__ = ["Metadata", "MetadataList", "frozen", "metadata_problem", "MAX_METADATA_DEPTH",
           "MAX_METADATA_BYTES"]

#: How deeply lists and objects may nest in metadata.
MAX_METADATA_DEPTH = 64

#: The largest metadata `rtf serve` stores with a query: bytes of its JSON text
#: (``json.dumps``, UTF-8). The engine itself takes any size.
MAX_METADATA_BYTES = 65_536

_READ_ONLY = "query metadata is read-only (copy it with copy.deepcopy to change it)"


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(_READ_ONLY)


class Metadata(dict):  # type: ignore[type-arg]
    """A read-only JSON object (a ``dict`` that refuses every change)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle without __setitem__: read-only again
        return (Metadata, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        """A plain dict, deeply: the copy to change."""
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __repr__(self) -> str:
        return f"Metadata({dict.__repr__(self)})"


class MetadataList(list):  # type: ignore[type-arg]
    """A read-only JSON array (a ``list`` that refuses every change)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (MetadataList, (list(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]


def frozen(metadata: Mapping[str, Any]) -> Metadata:
    """A deep read-only copy of `metadata`, a mapping of str keys to JSON values.

    TypeError (naming the value, as ``metadata["a"][2]``) for a key that is
    not a str or a value that is not JSON: None, bool, int, float, str, a
    list or tuple, a mapping with str keys. ValueError for a float that is
    not finite (JSON has no NaN), a string that is not valid Unicode (a lone
    surrogate), and nesting deeper than `MAX_METADATA_DEPTH`.
    """
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping or None, not {type(metadata).__name__}")
    try:
        return _freeze(metadata, 0)
    except _Refused as e:  # its path is known now, from the value up
        raise e.kind(e.message("metadata" + "".join(reversed(e.path)))) from None


def metadata_problem(metadata: Any, max_bytes: int = MAX_METADATA_BYTES) -> str | None:
    """Why `metadata` cannot be kept -- not a mapping `frozen` takes (its message), or
    over `max_bytes` of JSON text -- or None: what `rtf serve` checks before it
    stores metadata, and before it shows a stored one (a row written by hand)."""
    try:
        frozen(metadata)
    except (TypeError, ValueError) as e:
        return str(e)
    size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    if size > max_bytes:
        return f"metadata is {size} bytes of JSON, over the limit of {max_bytes} bytes"
    return None


class _Refused(Exception):
    """A value `frozen` refuses: the error to raise (`kind`, and its `message` given the
    value's path), the path gathered on the way up (so that a value taken costs no
    path at all)."""

    def __init__(self, kind: type[Exception], message: Callable[[str], str]):
        super().__init__()
        self.kind, self.message = kind, message
        self.path: list[str] = []


def _freeze(value: Any, depth: int) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        _check_unicode(value, "")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused(ValueError, lambda where: f"{where} is {value}: JSON has no NaN or infinity")
        return value
    if depth >= MAX_METADATA_DEPTH:
        raise _Refused(ValueError, lambda where: f"metadata nests more than {MAX_METADATA_DEPTH} "
                                                 f"levels deep (at {_shortened(where)})")
    if isinstance(value, Mapping):
        items = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused(TypeError, lambda where: f"{where} has the key {key!r:.80}: metadata "
                                                        "keys are str (JSON object keys)")
            _check_unicode(key, f" key {key!r:.80}")
            try:
                items[key] = _freeze(item, depth + 1)
            except _Refused as e:
                e.path.append(f"[{key!r:.80}]")
                raise
        return Metadata(items)
    if isinstance(value, (list, tuple)):
        copied = []
        for i, item in enumerate(value):
            try:
                copied.append(_freeze(item, depth + 1))
            except _Refused as e:
                e.path.append(f"[{i}]")
                raise
        return MetadataList(copied)
    raise _Refused(TypeError, lambda where: f"{where} is a {type(value).__name__}, not a JSON value "
                                            "(metadata holds None, bool, int, float, str, lists and "
                                            "mappings with str keys)")


def _shortened(where: str) -> str:
    return where if len(where) <= 120 else f"{where[:60]}...{where[-50:]}"


def _check_unicode(text: str, what: str) -> None:
    """`text` (the value, or `what` names the key) holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused(ValueError, lambda where: f"{where}{what} is not valid Unicode (a lone "
                                                 "surrogate)") from None


# json.dumps needs nothing: Metadata and MetadataList are a dict and a list.
assert json.dumps(Metadata({"a": MetadataList([1])})) == '{"a": [1]}'
