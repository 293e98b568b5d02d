"""What a query means: the query model and the rules every engine shares.

`terms` (RDF terms as canonical N-Triples strings), `model` (the immutable
query model: patterns, tuple conjuncts, branches, full-text and filter
expressions), `text` (words and the full-text evaluator), `values` and
`functions` (SPARQL values, comparisons, functions and casts),
`expressions` (filters compiled to closures, three-valued logic), `regex`
(XPath regular expressions on RE2) and `decompose` (filters to disjunctive
normal form to branches of tuple conjuncts).

Nothing here reads a file or knows an index: the parser builds these
values, the indexes store them, the filter evaluates them.
"""
