"""A cache of a function of one string, bounded by the length of what it keeps.

Publications bring literals of any size -- DBpedia abstracts run to
kilobytes -- and a long-running matcher sees each of them once or a few
times. A cache bounded by its number of entries (``lru_cache(maxsize=65536)``)
then keeps 65,536 texts and everything made of them: a process grew by
1.6 GB over 72,000 publications that way. These caches count the characters
of the keys they hold (each entry also costs `ENTRY_CHARS`, so small keys
are bounded too) and start again, empty, when the count passes their budget:
memory stays under the budget whatever the stream, and a publication's
repeated literals are still computed once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

#: What an entry costs beyond its key's characters (the dict slot, the value's header).
ENTRY_CHARS = 64


_MISSING = object()


def bounded_by_chars(budget: int, weight: int = 1) -> Callable:
    """Decorator: memoise a function of a string (and maybe a few small
    hashable arguments after it) while the keys' characters,
    times `weight` (the value's size per key character), stay within `budget`.

    The wrapped function has ``cache_clear()`` and ``cache_chars()`` (the
    current count), as `functools.lru_cache` has ``cache_clear``.
    """
    def decorate(fn):
        cache: dict = {}
        used = 0

        @functools.wraps(fn)
        def cached(key, *rest):
            nonlocal used
            memo_key = (key, *rest) if rest else key
            found = cache.get(memo_key, _MISSING)
            if found is _MISSING:
                found = fn(key, *rest)
                cost = (len(key) + ENTRY_CHARS) * weight
                if used + cost > budget:
                    cache.clear()
                    used = 0
                if cost <= budget:
                    cache[memo_key] = found
                    used += cost
            return found

        def cache_clear() -> None:
            nonlocal used
            cache.clear()
            used = 0

        cached.cache_clear = cache_clear
        cached.cache_chars = lambda: used
        return cached
    return decorate
