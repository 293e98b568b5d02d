"""``rtf bench``: the RTF paper's evaluation (section 4), side by side.

The paper filters I_pub = 5K DBpedia publications against query databases
of DB = 20K ... 100K generated queries (FT_pr = 0, 50 or 100 % of the
literal tuples with a full-text constraint), inserting the queries 20K at a
time, and reports filter time per publication, throughput, index memory and
insertion time per step (Figs. 5-7). This module does the same with any of
the engines (`rtf.engine.ALGORITHMS`)::

    rtf bench                                     # a few minutes on 2 cores
    rtf bench --db 20000,40000,60000,80000,100000 --pubs 100 \\
              --json out.json --plots out/        # the paper's DB sizes, ~17 min
    rtf bench --mix selective ...                 # ~2 % of the queries match, not ~11 %

How it measures, and why:

- One workload for all engines. The queries are generated once
  (`rtf.bench.workload.generate_queries`, deterministic by ``--seed``; ``--mix``
  picks the paper's mix or the selective one) and parsed
  once (`rtf.parser.parse_query`); every engine registers the same parsed
  `Query` objects, so parsing is charged to no engine.
- One fresh process per algorithm (``fork`` on POSIX): an engine never
  pays for the garbage or the allocator state another one left behind. In
  the child the harness's own objects (publications, parsed queries) are
  moved out of the garbage collector's sight (`gc.freeze`), so a collection
  scans the engine's objects only.
- Insertion: queries are registered in steps of ``--step`` (default: the
  first DB size, the paper's I_p = 20K); ``insert_s`` of a DB size is the
  time to register the queries added since the previous DB size.
- Filtering: at each DB size every publication goes through
  ``Engine.match`` once, timed one by one (mean, p50, p99; throughput in
  publications/s and KB/s of N-Triples, `Publication.size_bytes`; the
  mean number of matches per publication, the workload's selectivity). The
  literal-text cache (`rtf.query.text.text_index`) is emptied before each pass,
  so every pass pays the tokenisation of its publications as a stream
  would.
- Memory: a second, untimed insertion in another fresh process, under
  `tracemalloc`: ``index_mb`` is the size of the live Python objects the
  engine holds, read after each DB size (after a collection). The engine
  registers fresh copies of the parsed queries there, so the figure is
  its index plus its own copy of every query -- what registering the query
  texts would keep -- and not the interpreter, the harness, the parser's
  garbage or the allocator's free lists. It is exact and the same on every
  run, where the growth of the process's RSS in Python is blurred by arena
  reuse at the scale of one step. tracemalloc slows allocation
  several-fold, hence the separate pass. (``peak_rss_mb`` of the timing
  process is reported too, for scale.)
- Answers: at each DB size the engines' matches are compared publication by
  publication (a digest of query ids and solutions) on the publications
  they all saw. Any difference is a correctness bug: the bench says so in
  capitals, looks for the smallest reproducing query and publication, and
  exits with status 3.
"""
