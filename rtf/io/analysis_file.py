"""Text analysis options from a file or a JSON string: what ``--text-analysis`` of ``rtf
match`` and ``rtf index build``, ``text_analysis`` of ``rtf serve`` (``RTF_SERVE_TEXT_ANALYSIS``)
and the Spark jobs take.

The options are `rtf.query.analysis.TextAnalysis.as_dict`'s (one analysis for every
literal) or `FieldAnalysis.as_dict`'s (``default`` and ``fields``: per predicate and
language tag), as JSON or TOML (a file whose name ends in ``.toml``); a value that starts
with ``{`` is the JSON itself::

    >>> read_text_analysis('{"fields": [{"lang": "en", "stem": "english"}]}').rules[0].lang
    'en'
    >>> read_text_analysis('{"fold_accents": true}')
    TextAnalysis(fold_accents=True, stem=None, stop_words=None, cjk_bigrams=False)

Any problem is a `TextAnalysisError` in one line naming the file.
"""

from __future__ import annotations

import json
import tomllib

from rtf.query.analysis import FieldAnalysis, TextAnalysis, TextAnalysisError, analysis_from_dict


def read_text_analysis(value: str) -> TextAnalysis | FieldAnalysis | None:
    """The analysis `value` (a JSON object, or a JSON or TOML file's name) asks for; None for the
    spec's default words."""
    where = "--text-analysis"
    try:
        if value.lstrip().startswith("{"):
            options = json.loads(value)
        else:
            where = value
            with open(value, "rb") as f:
                data = f.read()
            options = tomllib.loads(data.decode("utf-8")) if value.endswith(".toml") else json.loads(data)
        analysis = analysis_from_dict(options)
    except OSError as e:
        raise TextAnalysisError(f"{where}: cannot read the text analysis options: {e.strerror or e}") from None
    except (ValueError, tomllib.TOMLDecodeError) as e:  # (TextAnalysisError and JSON errors are ValueErrors)
        raise TextAnalysisError(f"{where}: {e}") from None
    return None if analysis.is_default else analysis
