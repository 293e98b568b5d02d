"""What comes in and goes out: publications, the taxonomy, query files, saved indexes, output lines.

`publication` (a publication: an id and its triples), `reader` and
`sources` (streaming RDF files, stdin and growing files into publications),
`memory` (RDF held in memory -- bytes, strings, streams -- as a source),
`taxonomy` (the rdfs:subClassOf closure of an ontology file), `queries`
(JSON Lines and .rq query files), `store` (the saved-index format,
docs/index-format.md), `output` (match lines: JSON Lines and SPARQL JSON),
`files` (atomic output files), `datasets` (where the DBpedia sample lives).
"""
