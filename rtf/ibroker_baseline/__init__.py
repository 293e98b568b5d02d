"""The iBroker baseline: an inverted index of query chains (RTF paper, section 3.3).

The competitor the RTF paper measures its trie forests against. Only the
index differs from RTFm and RTFs: registration, the query table, the
full-text verification, the join and the residual filters are the shared
`rtf.filter.IndexedQueries`, so the three engines give the same answers and
a comparison of their speed measures the indexing alone.

>>> index = make_ibroker_index()
>>> index.name
'ibroker'

**From the paper.** iBroker indexes the continuous queries in one hash
table keyed by the unique attributes of all query triples; each bucket
holds references to lists of stored query entries, and each entry stores
(i) the query id, (ii) NextToMatch, a reference to the hash bucket of the
query's next attribute, (iii) Value, the string the query requires, and
(iv) the query's variables. A query is a chain: following NextToMatch from
its first attribute until an empty NextToMatch recomposes it. There is no
order among queries, so a publication examines every bucket it touches and
every query entry in it, looking for beginnings of chains, and follows
their NextToMatch references until nothing is left to match. The RTF
authors extended it with full text by replacing Value with the list of the
words of the full-text constraint, and with wildcards in any position.

**Our reading.** The attribute of a tuple is its predicate: a constant
predicate keys by its N-Triples string; the path ``a/rdfs:subClassOf*``
keys by ``a/rdfs:subClassOf*`` and only the taxonomy's virtual triples
reach that bucket; all variable predicates share one bucket ``?`` and all
wildcard predicates one bucket ``*``, both touched by every real triple and
never by virtual ones. The "query" of an entry is a conjunctive branch of a
query (``ftor`` and ``||`` make several, each its own chain), its tuples
chained in the order written; nothing is shared between queries or between
branches (``share_shapes=False`` gives every tuple its own shape). Value is
the object constant, or for a full-text tuple its required words and
prefixes (`rtf.query.text.required_words`); an entry also keeps its subject
constant and its positional variables, from which repeated variables such
as ``(?x, p, ?x)`` are checked. A link of a chain is met when some triple
of its attribute satisfies its constants, repeated variables and required
words; a chain reports its tuples only when every link is met. Bindings
are not carried along the chain: the G-ToPSS join of `IndexedQueries`
does that, as it does for RTF, and so do the phrase, proximity, prefix and
``ftnot`` checks. So as not to slow the baseline artificially, buckets are
Python dicts (a NextToMatch hop finds its entry in one lookup, removal is
O(1)), words are tested by hash lookup in the literal's word table, and the
publication's triples are grouped by predicate (and by object, for entries
with an object constant) -- a lookup on the data, not an index of queries.
"""

from rtf.filter import IndexedQueries
from rtf.ibroker_baseline.inverted_index import Bucket, IBrokerIndex, QueryEntry


def make_ibroker_index() -> IndexedQueries:
    """An empty iBroker engine index; no tuple is clustered across queries."""
    return IndexedQueries(IBrokerIndex(), "ibroker", share_shapes=False)


__all__ = ["make_ibroker_index", "IBrokerIndex", "Bucket", "QueryEntry"]
