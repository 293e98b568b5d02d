"""The filter's parts: from the tuple shapes a publication satisfies to each query's answers.

`query_table` (queries, branches as slots, tuple shapes; completion counted
set-at-a-time), `solutions` (answering complete branches: star
intersections, joins, residual filters, projection), `join` (G-ToPSS
binding tables), `optional` (SPARQL's LeftJoin, also the naive engine's
algebra) and `explain` (why a query matched, why one never can).
`rtf.filter` drives them; the indexes (`rtf.trieforest`,
`rtf.ibroker_baseline`) fill them.
"""
