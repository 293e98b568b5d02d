"""The RTF trie forests (RTF paper, section 3): RTFm and RTFs.

Both store tuple shapes (`rtf.matching.query_table`) in a forest of tries keyed
subject -> predicate -> object (`forest.StructuralForest`), sharing the
nodes of equal structure across queries. They differ in where word
constraints live: RTFm expands them under each structural path
(`rtfm.RTFmIndex`), RTFs keeps them in one separate word forest tied to
the structure by shape (`rtfs.RTFsIndex`). Filtering, the query table and
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
