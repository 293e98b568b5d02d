"""The bundled example files (queries, news publications, a small ontology), installed as ``rtf.examples``.

``rtf demo`` runs them when the DBpedia sample is absent; the README's and
the docs' commands read them from this folder of a checkout.
"""
