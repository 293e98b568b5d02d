"""The iBroker inverted index: one hash table of attribute buckets, queries as chains.

`IBrokerIndex` keeps a single hash table (``dict``) from the attribute of
each query tuple -- its predicate -- to a `Bucket`. A bucket holds the
`QueryEntry` of every stored tuple with that attribute, of every query,
unclustered: two queries that ask for the same tuple have two entries. A
query branch is a chain of entries in tuple order, each entry pointing to
the bucket of the next one (NextToMatch). A branch
``(?x, dbo:title, ?t) . (?x, dbo:abstract, ?b) FILTER ftcontains(?b, "rio")``
is stored as::

    table["<dbo:title>"]    -> entry(branch 7, #0, NextToMatch = bucket "<dbo:abstract>")
    table["<dbo:abstract>"] -> entry(branch 7, #1, NextToMatch = None, Value = ["rio"])

Filtering a publication visits every bucket the publication touches,
examines every entry in it, and walks the chain of each entry that begins
one, checking each tuple against the publication's triples of that
attribute. Only a chain whose every tuple is met by some triple reports its
(shape, triple) pairs; the join, the phrase/proximity/prefix/``ftnot``
checks and the residual filters are `rtf.filter.IndexedQueries`'s.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Iterator

from rtf.filter import ShapeIndex, Triple
from rtf.matching.query_table import WILDCARD_CONTENT, RegisteredBranch, TupleShape, is_var_content
from rtf.query.terms import TYPE_PATH_KEY
from rtf.query.text import literal_text_index

#: Bucket key of every tuple whose predicate is a variable: any real triple touches it.
VARIABLE_ATTRIBUTE = "?"
#: Bucket key of every tuple whose predicate is the wildcard: any real triple touches it.
WILDCARD_ATTRIBUTE = "*"


def attribute_of(shape: TupleShape) -> str:
    """The hash key of a tuple: its predicate, with all variables and wildcards pooled.

    A constant predicate keys by its N-Triples string, the taxonomy path by
    ``a/rdfs:subClassOf*`` (fed only by virtual triples); every variable
    predicate shares the bucket ``?`` and every wildcard predicate ``*``.
    """
    p = shape.predicate
    if is_var_content(p):
        return VARIABLE_ATTRIBUTE
    if p == WILDCARD_CONTENT:
        return WILDCARD_ATTRIBUTE
    return p


def _is_constant(content: str) -> bool:
    return not is_var_content(content) and content != WILDCARD_CONTENT


class QueryEntry:
    """One stored query tuple: a link of its branch's chain.

    `branch_id` and `position` name the query branch and the tuple's place
    in it; `next_to_match` is the bucket of the branch's next tuple (None at
    the end of the chain). `value` is iBroker's Value: the object constant,
    or for a full-text tuple the list of its required words (and prefixes);
    with ``ftor`` one such list per alternative, any one of which suffices.
    `variables` are the tuple's positional variables as ``(position,
    "?k")``; `repeats` the position pairs a repeated variable ties together.
    """

    __slots__ = ("branch_id", "position", "next_to_match", "shape", "subject", "object",
                 "alternatives", "single_words", "variables", "repeats")

    def __init__(self, branch_id: int, position: int, shape: TupleShape):
        self.branch_id = branch_id
        self.position = position
        self.next_to_match: Bucket | None = None
        self.shape = shape
        self.subject = shape.subject if _is_constant(shape.subject) else None
        self.object = shape.object if _is_constant(shape.object) else None
        # Full-text keys: one (words, prefixes) per ftor alternative; None: no full text.
        self.alternatives = shape.alternatives if shape.fulltext is not None else None
        # Alternatives of one whole word are tested together with one set test, so
        # a long synonym list costs what the literal's words cost, not its length.
        self.single_words: frozenset[str] = frozenset()
        if self.alternatives and len(self.alternatives) > 1:
            self.single_words = frozenset(ws[0] for ws, ps in self.alternatives
                                          if len(ws) == 1 and not ps)
            self.alternatives = tuple((ws, ps) for ws, ps in self.alternatives
                                      if not (len(ws) == 1 and not ps))
        self.variables = tuple((i, c) for i, c in enumerate(shape.structure) if is_var_content(c))
        first: dict[str, int] = {}
        repeats = []
        for i, c in self.variables:
            if c in first:
                repeats.append((first[c], i))
            else:
                first[c] = i
        self.repeats = tuple(repeats)

    @property
    def value(self):
        """iBroker's Value field: the object constant, or the full-text word list
        (a list of word lists when ``ftor`` gives several alternatives)."""
        alternatives = self.alternatives
        if alternatives is None:
            return self.object
        lists = [(w,) for w in sorted(self.single_words)]
        lists += [ws + tuple(p + "*" for p in ps) for ws, ps in alternatives]
        if len(lists) == 1:
            return lists[0]
        return tuple(lists) if lists else ()

    def accepts(self, triple: Triple) -> bool:
        """The triple meets this tuple's constants, repeated variables and required words.

        The predicate is not tested: the bucket the triple came from decided it.
        """
        if self.subject is not None and triple[0] != self.subject:
            return False
        o = triple[2]
        if self.object is not None and o != self.object:
            return False
        for i, j in self.repeats:
            if triple[i] != triple[j]:
                return False
        alternatives = self.alternatives
        if alternatives is not None:
            if o[0] != '"':  # ftcontains is false on IRIs and blank nodes
                return False
            single = self.single_words
            if not alternatives and not single:  # no certain word: the full check decides
                return True
            text = literal_text_index(o)
            if single and not single.isdisjoint(text.keys):
                return True
            return any(_holds(text, ws, ps) for ws, ps in alternatives)
        return True

    def size_bytes(self) -> int:
        size = sys.getsizeof(self) + sys.getsizeof(self.variables) + sys.getsizeof(self.repeats)
        if self.alternatives is not None:
            size += sys.getsizeof(self.alternatives)
            size += sum(sys.getsizeof(ws) + sys.getsizeof(ps) for ws, ps in self.alternatives)
        return size

    def __repr__(self) -> str:
        nxt = self.next_to_match.key if self.next_to_match is not None else None
        return (f"QueryEntry(branch {self.branch_id} #{self.position}, next={nxt}, "
                f"value={self.value!r})")


def _holds(text, words: tuple[str, ...], prefixes: tuple[str, ...]) -> bool:
    """Every word and prefix occurs in the text (hash lookups, a key range per prefix)."""
    keys = text.keys  # words and bigrams (the keys of two-word phrases)
    for w in words:
        if w not in keys:
            return False
    if prefixes:
        sw = text.sorted_words
        for pre in prefixes:
            k = bisect_left(sw, pre)
            if k == len(sw) or not sw[k].startswith(pre):
                return False
    return True


class Bucket:
    """The entries of every stored tuple with one attribute.

    `entries` is the bucket's list of query entries, keyed by (branch id,
    position) so that a NextToMatch hop finds its branch's entry in one
    lookup and removal is O(1); iteration is the plain list scan of iBroker.
    """

    __slots__ = ("key", "entries")

    def __init__(self, key: str):
        self.key = key
        self.entries: dict[tuple[int, int], QueryEntry] = {}

    def __repr__(self) -> str:
        return f"Bucket({self.key}, {len(self.entries)} entries)"


class PublicationTriples:
    """A publication's triples grouped by predicate (and object): data, not a query index.

    Real triples feed constant, variable and wildcard attributes; virtual
    taxonomy triples feed only the ``a/rdfs:subClassOf*`` attribute.
    """

    __slots__ = ("real", "virtual", "real_by_predicate", "virtual_by_predicate",
                 "_by_predicate_object", "_by_object")

    def __init__(self, triples: list[Triple], virtual: list[Triple]):
        self.real = triples
        self.virtual = virtual
        self.real_by_predicate = _group(triples, 1)
        self.virtual_by_predicate = _group(virtual, 1)
        self._by_predicate_object: dict | None = None
        self._by_object: dict | None = None

    def attributes(self) -> list[str]:
        """The bucket keys this publication touches."""
        keys = list(self.real_by_predicate)
        if self.real:
            keys += (VARIABLE_ATTRIBUTE, WILDCARD_ATTRIBUTE)
        keys += self.virtual_by_predicate
        return keys

    def for_entry(self, attribute: str, entry: QueryEntry):
        """The triples of `attribute` that could meet `entry` (its object constant narrows them)."""
        obj = entry.object
        if attribute == VARIABLE_ATTRIBUTE or attribute == WILDCARD_ATTRIBUTE:
            if obj is None:
                return self.real
            if self._by_object is None:
                self._by_object = _group(self.real, 2)
            return self._by_object.get(obj, ())
        virtual = attribute == TYPE_PATH_KEY
        if obj is None:
            grouped = self.virtual_by_predicate if virtual else self.real_by_predicate
            return grouped.get(attribute, ())
        if self._by_predicate_object is None:
            table: dict = {}
            for src, group in ((False, self.real), (True, self.virtual)):
                for t in group:
                    table.setdefault((src, t[1], t[2]), []).append(t)
            self._by_predicate_object = table
        return self._by_predicate_object.get((virtual, attribute, obj), ())


def _group(triples: list[Triple], i: int) -> dict[str, list[Triple]]:
    out: dict[str, list[Triple]] = {}
    for t in triples:
        out.setdefault(t[i], []).append(t)
    return out


class IBrokerIndex(ShapeIndex):
    """iBroker's hash table of attribute buckets with NextToMatch chains (RTF paper, 3.3)."""

    def __init__(self):
        self.table: dict[str, Bucket] = {}
        self._branch_ids: dict[RegisteredBranch, int] = {}
        self._next_branch = 0
        self._entries = 0

    # Shapes are not indexed on their own: a tuple lives in the index only as
    # a link of its query's chain, which add_branch builds.
    def add(self, shape: TupleShape) -> None:
        pass

    def remove(self, shape: TupleShape) -> None:
        pass

    def add_branch(self, rb: RegisteredBranch) -> None:
        bid = self._next_branch
        self._next_branch += 1
        previous: QueryEntry | None = None
        for pos, shape in enumerate(rb.shapes):
            key = attribute_of(shape)
            bucket = self.table.get(key)
            if bucket is None:
                bucket = self.table[key] = Bucket(key)
            entry = QueryEntry(bid, pos, shape)
            bucket.entries[(bid, pos)] = entry
            self._entries += 1
            if previous is not None:
                previous.next_to_match = bucket
            previous = entry
        self._branch_ids[rb] = bid

    def remove_branch(self, rb: RegisteredBranch) -> None:
        bid = self._branch_ids.pop(rb)
        for pos, shape in enumerate(rb.shapes):
            key = attribute_of(shape)
            bucket = self.table[key]
            del bucket.entries[(bid, pos)]
            self._entries -= 1
            if not bucket.entries:
                del self.table[key]

    def candidates(self, triples: list[Triple], virtual: list[Triple]) -> Iterator[tuple[TupleShape, Triple]]:
        pub = PublicationTriples(triples, virtual)
        table = self.table
        for attribute in pub.attributes():
            bucket = table.get(attribute)
            if bucket is None:
                continue
            # No order among the queries: every entry of the bucket is examined,
            # and only those that begin a chain are followed.
            for entry in bucket.entries.values():
                if entry.position:
                    continue
                found = self._follow_chain(entry, attribute, pub)
                if found is not None:
                    for shape, hits in found:
                        for t in hits:
                            yield shape, t

    @staticmethod
    def _follow_chain(entry: QueryEntry, attribute: str, pub: PublicationTriples):
        """(shape, triples) of each link of the chain, or None when a link finds no triple."""
        found = []
        while True:
            hits = [t for t in pub.for_entry(attribute, entry) if entry.accepts(t)]
            if not hits:
                return None
            found.append((entry.shape, hits))
            bucket = entry.next_to_match
            if bucket is None:
                return found
            entry = bucket.entries[(entry.branch_id, entry.position + 1)]
            attribute = bucket.key

    def stats(self) -> dict:
        size = sys.getsizeof(self.table) + sys.getsizeof(self._branch_ids)
        for key, bucket in self.table.items():
            size += sys.getsizeof(key) + sys.getsizeof(bucket) + sys.getsizeof(bucket.entries)
            size += sum(e.size_bytes() for e in bucket.entries.values())
        return {"buckets": len(self.table), "entries": self._entries,
                "chains": len(self._branch_ids), "index_bytes_estimate": size}
