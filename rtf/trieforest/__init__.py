"""The RTF trie forests (RTF paper, section 3): RTFm and RTFs.

Both store tuple shapes (`rtf.matching.query_table`) in a forest of tries keyed
subject -> predicate -> object (`forest.StructuralForest`), sharing the
nodes of equal structure across queries. They differ in where word
constraints live: RTFm keeps a word index at each object node, its words
clustered by structure (`rtfm.RTFmIndex`), RTFs one word index for all
shapes, tied to the structure by shape (`rtfs.RTFsIndex`); a word index
(`words.WordIndex`) holds each key's postings and answers a literal by
counting, where the paper has word tries. Filtering, the query table and
the join are common to all indexed engines (`rtf.filter`).
"""

from rtf.filter import IndexedQueries


def make_rtf_index(algorithm: str) -> IndexedQueries:
    """An empty RTFm or RTFs engine index."""
    if algorithm == "rtfm":
        from rtf.trieforest.rtfm import RTFmIndex
        return IndexedQueries(RTFmIndex(), "rtfm")
    if algorithm == "rtfs":
        from rtf.trieforest.rtfs import RTFsIndex
        return IndexedQueries(RTFsIndex(), "rtfs")
    raise ValueError(f"not an RTF algorithm: {algorithm!r}")
