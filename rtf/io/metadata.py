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
from collections.abc import Mapping
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
    return _freeze(metadata, "metadata", 0)


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


def _freeze(value: Any, where: str, depth: int) -> Any:
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        _check_unicode(value, where)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value}: JSON has no NaN or infinity")
        return value
    if depth >= MAX_METADATA_DEPTH:
        at = where if len(where) <= 120 else f"{where[:60]}...{where[-50:]}"
        raise ValueError(f"metadata nests more than {MAX_METADATA_DEPTH} levels deep (at {at})")
    if isinstance(value, Mapping):
        items = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has the key {key!r:.80}: metadata keys are str (JSON object keys)")
            _check_unicode(key, f"{where} key {key!r:.80}")
            items[key] = _freeze(item, f"{where}[{key!r:.80}]", depth + 1)
        return Metadata(items)
    if isinstance(value, (list, tuple)):
        return MetadataList(_freeze(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
    raise TypeError(f"{where} is a {type(value).__name__}, not a JSON value (metadata holds None, "
                    "bool, int, float, str, lists and mappings with str keys)")


def _check_unicode(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where} is not valid Unicode (a lone surrogate)") from None


# json.dumps needs nothing: Metadata and MetadataList are a dict and a list.
assert json.dumps(Metadata({"a": MetadataList([1])})) == '{"a": [1]}'
