"""The class taxonomy behind the property path ``a/rdfs:subClassOf*``.

``?x a/rdfs:subClassOf* dbo:Athlete`` holds when ``?x`` has a type that is
``dbo:Athlete`` or one of its subclasses, transitively, in the taxonomy
loaded into the engine (spec section 1; the publication's own
``rdfs:subClassOf`` triples play no part, section 4). Every engine answers it
the same way, without any path machinery in its index:

- the query pattern is indexed as an ordinary triple pattern whose predicate
  is the pseudo-key `TYPE_PATH_KEY`;
- before matching, the publication is extended with `Taxonomy.expand`: for
  each ``(s, rdf:type, C)`` one virtual triple ``(s, TYPE_PATH_KEY, D)`` for
  every ``D`` in ``ancestors_or_self(C)``.

The zero-length path is why `ancestors_or_self` always contains the class
itself, even a class the taxonomy has never heard of (a yago type, a typo):
``?x a/rdfs:subClassOf* C`` then behaves like ``?x a C``.

A taxonomy is a directed acyclic graph over IRI keys: multiple inheritance is
allowed, a cycle is a `TaxonomyError` naming its classes (a self-loop
``A rdfs:subClassOf A`` is true of every class and is dropped). Edges to or
from blank nodes, which is how OWL writes restrictions and class
expressions, carry no named class and are ignored; so is ``owl:equivalentClass``,
which ``rdfs:subClassOf*`` does not follow. Closures are computed on demand and
memoised per class. A taxonomy pickles as its edge lists only, so broadcasting
it to Spark executors does not ship the caches.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import pyoxigraph as ox

from rtf.errors import PublicationError, TaxonomyError
from rtf.io.sources import detect_format, open_binary
from rtf.query.terms import (
    RDF_TYPE,
    RDFS_SUBCLASSOF,
    TYPE_PATH_KEY,
    iri_key,
    is_blank,
    is_iri,
)

__all__ = ["Taxonomy"]

_TYPE = iri_key(RDF_TYPE)
_SUBCLASSOF = ox.NamedNode(RDFS_SUBCLASSOF)
_CLASS_TYPES = {ox.NamedNode("http://www.w3.org/2002/07/owl#Class"),
                ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#Class")}

Triple = tuple[str, str, str]


def _closure(node: str, edges: Mapping[str, tuple[str, ...]],
             cache: dict[str, frozenset[str]]) -> frozenset[str]:
    """`node` and every class reachable from it along `edges`, memoised in `cache`.

    Iterative, so a deep taxonomy cannot exhaust Python's recursion limit; it
    ends because the graph is acyclic (checked when the taxonomy is built).
    An unknown node is its own closure and is not cached, so that looking up
    many unknown types does not grow the cache.
    """
    found = cache.get(node)
    if found is not None:
        return found
    if node not in edges:
        return frozenset((node,))
    stack = [node]
    while stack:
        n = stack[-1]
        if n in cache:
            stack.pop()
            continue
        missing = [m for m in edges[n] if m not in cache]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        cache[n] = frozenset((n,)).union(*(cache[m] for m in edges[n]))
    return cache[node]


def _check_acyclic(parents: Mapping[str, tuple[str, ...]]) -> None:
    """Raise `TaxonomyError` naming the classes of a cycle, if there is one."""
    done: set[str] = set()
    for root in parents:
        if root in done:
            continue
        # Depth-first, iteratively: `path` is the chain being explored and
        # `on_path` its members, so an edge back into it closes a cycle.
        path, on_path, branches = [root], {root}, [iter(parents[root])]
        while branches:
            for parent in branches[-1]:
                if parent in on_path:
                    cycle = path[path.index(parent):] + [parent]
                    raise TaxonomyError("rdfs:subClassOf cycle: " + " -> ".join(cycle))
                if parent not in done:
                    path.append(parent)
                    on_path.add(parent)
                    branches.append(iter(parents[parent]))
                    break
            else:
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                branches.pop()


class Taxonomy:
    """An acyclic ``rdfs:subClassOf`` hierarchy over class IRI keys.

    >>> t = Taxonomy.from_edges([("<http://x/Athlete>", "<http://x/Person>")])
    >>> sorted(t.ancestors_or_self("<http://x/Athlete>"))
    ['<http://x/Athlete>', '<http://x/Person>']
    >>> t.ancestors_or_self("<http://x/Unknown>")
    frozenset({'<http://x/Unknown>'})
    """

    __slots__ = ("_parents", "_children", "_up", "_down")

    def __init__(self, parents: Mapping[str, Iterable[str]]):
        """From each class's direct superclasses (IRI keys); `from_edges` checks the keys.

        Self-loops are dropped; a superclass that is not a key becomes a class.
        """
        table = {c: tuple(p for p in dict.fromkeys(ps) if p != c) for c, ps in parents.items()}
        for ps in list(table.values()):
            for p in ps:
                table.setdefault(p, ())
        _check_acyclic(table)
        self._set_parents(table)

    def _set_parents(self, parents: dict[str, tuple[str, ...]]) -> None:
        self._parents = parents
        children: dict[str, list[str]] = {c: [] for c in parents}
        for c, ps in parents.items():
            for p in ps:
                children[p].append(c)
        self._children = {c: tuple(cs) for c, cs in children.items()}
        self._up: dict[str, frozenset[str]] = {}
        self._down: dict[str, frozenset[str]] = {}

    # ------------------------------------------------------------ building

    @classmethod
    def from_edges(cls, edges: Iterable[tuple[str, str]], classes: Iterable[str] = ()
                   ) -> Taxonomy:
        """From ``(subclass_key, superclass_key)`` pairs, plus classes without edges.

        Keys are N-Triples terms (``<http://...>``). Pairs with a blank node
        are ignored, and so are self-loops; anything else that is not an IRI
        key is a `TaxonomyError` (usually a bare IRI missing its brackets).
        """
        parents: dict[str, list[str]] = {c: [] for c in map(_class_key, classes)}
        for sub, sup in edges:
            if not (is_blank(sub) or is_blank(sup)):
                parents.setdefault(_class_key(sub), []).append(_class_key(sup))
        return cls(parents)

    @classmethod
    def from_file(cls, path: str | os.PathLike, format: str | ox.RdfFormat | None = None
                  ) -> Taxonomy:
        """The taxonomy of an ontology file, streamed through pyoxigraph.

        The format comes from the suffix as for `rtf.io.reader.read_publications`
        (``.owl``/``.rdf`` RDF/XML, ``.nt``, ``.ttl``, ..., optionally ``.gz``
        or ``.bz2``) unless `format` says otherwise. Besides the
        ``rdfs:subClassOf`` edges, IRIs typed ``owl:Class`` or ``rdfs:Class``
        are classes of the taxonomy, with or without edges.
        """
        edges: list[tuple[str, str]] = []
        classes: list[str] = []
        try:
            fmt, compression = detect_format(path, format)
            with open_binary(path, compression) as f:
                for q in ox.parse(f, fmt):
                    if q.predicate == _SUBCLASSOF:
                        edges.append((str(q.subject), str(q.object)))
                    elif q.object in _CLASS_TYPES and isinstance(q.subject, ox.NamedNode) \
                            and q.predicate.value == RDF_TYPE:
                        classes.append(str(q.subject))
        except SyntaxError as e:
            where = f"{path}:{e.lineno}" if e.lineno else str(path)
            raise TaxonomyError(f"{where}: {e.msg}") from e
        except (PublicationError, OSError, EOFError) as e:
            raise TaxonomyError(f"cannot read the taxonomy {path}: {e}") from e
        return cls.from_edges(edges, classes)

    @classmethod
    def empty(cls) -> Taxonomy:
        """No classes: every class is only its own ancestor (plain ``a``)."""
        return cls({})

    # ------------------------------------------------------------- queries

    def ancestors_or_self(self, class_key: str) -> frozenset[str]:
        """`class_key` and all its superclasses, transitively (memoised)."""
        return _closure(class_key, self._parents, self._up)

    def descendants_or_self(self, class_key: str) -> frozenset[str]:
        """`class_key` and all its subclasses, transitively (memoised)."""
        return _closure(class_key, self._children, self._down)

    def parents(self, class_key: str) -> tuple[str, ...]:
        """The direct superclasses of `class_key` (none if unknown)."""
        return self._parents.get(class_key, ())

    def parent_table(self) -> dict[str, tuple[str, ...]]:
        """Each class and its direct superclasses: what ``Taxonomy(table)`` rebuilds
        (the saved form of a taxonomy, see `rtf.io.store`)."""
        return dict(self._parents)

    def edges(self) -> frozenset[tuple[str, str]]:
        """Every ``(subclass, superclass)`` pair, self-loops and blank nodes left out."""
        return frozenset((c, p) for c, ps in self._parents.items() for p in ps)

    def expand(self, triples: Iterable[Triple]) -> list[Triple]:
        """The virtual ``(s, TYPE_PATH_KEY, c)`` triples of the ``rdf:type`` triples.

        One for each ``(s, rdf:type, o)`` and each ``c`` in
        ``ancestors_or_self(o)``, each once (DBpedia already lists the
        transitive types, so they overlap a lot), in a deterministic order.
        """
        out: dict[Triple, None] = {}
        for s, p, o in triples:
            if p == _TYPE:
                for c in sorted(self.ancestors_or_self(o)):
                    out[(s, TYPE_PATH_KEY, c)] = None
        return list(out)

    # ------------------------------------------------------------ protocol

    def __len__(self) -> int:
        return len(self._parents)

    def __contains__(self, class_key: object) -> bool:
        return class_key in self._parents

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Taxonomy):
            return NotImplemented
        return (self._parents.keys() == other._parents.keys()
                and self.edges() == other.edges())

    __hash__ = None  # mutable caches, equality by content: not a dict key

    def __repr__(self) -> str:
        edges = sum(len(ps) for ps in self._parents.values())
        return f"<Taxonomy: {len(self)} classes, {edges} subClassOf edges>"

    def __getstate__(self) -> tuple[dict[str, tuple[str, ...]]]:
        # The edges are the taxonomy; children and caches are rebuilt on
        # arrival. A tuple, because pickle skips __setstate__ for a falsy
        # state, such as the empty taxonomy's {}.
        return (self._parents,)

    def __setstate__(self, state: tuple[dict[str, tuple[str, ...]]]) -> None:
        self._set_parents(state[0])  # acyclic: it was checked when first built


def _class_key(key: str) -> str:
    if not is_iri(key):
        raise TaxonomyError(f"a class must be an IRI key such as <http://...>, not {key!r}")
    return key
