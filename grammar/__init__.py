"""The grammar of the query language, `ftsparql.lark`, installed as ``rtf.grammar``."""
