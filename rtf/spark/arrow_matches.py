"""Matches as Arrow record batches: the rows `match_publications` hands back to Spark.

The schema and the column builder moved to `rtf.io.arrow_matches`, shared with
``rtf match --output-format arrow|parquet`` (one schema for both); imported
from there under their names here.
"""

from rtf.io.arrow_matches import MatchRows, arrow_match_schema, row_line

__all__ = ["MatchRows", "arrow_match_schema", "row_line"]
