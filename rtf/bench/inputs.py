"""The bench's inputs: its parameters, the publications sampled, the queries generated and parsed once.
"""


from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rtf.io.queries import load_queries

from rtf.io.progress import progress
from rtf.errors import QueryError, RtfError

#: Defaults sized so that ``rtf bench`` alone finishes in a few minutes on 2 cores.
DEFAULT_DB = (2000, 4000, 6000, 8000, 10000)
DEFAULT_PUBS = 300
DEFAULT_ALGORITHMS = ("rtfs", "rtfm", "ibroker")
PAPER_COMMAND = ("rtf bench --db 20000,40000,60000,80000,100000 --pubs 5000 "
                 "--ft-pr 50 --algorithms rtfs,rtfm,ibroker --json paper.json --plots paper/")

#: The paper's figures (section 4.1, DB = 100K, FT_pr = 50 %; C++ on a Core i7 3.6 GHz).
PAPER_FIGURES = {
    "rtfs": {"filter_ms_mean": 36.0, "pubs_per_s": 27.0, "kb_per_s": 17.0, "index_mb": 183.0},
    # RTFs is "2.5 % faster than RTFm"
    "rtfm": {"filter_ms_mean": 36.9, "pubs_per_s": 27.0, "kb_per_s": 17.0, "index_mb": 190.0},
    # 94 times RTFs' 36 ms (the text); its 0.28 publications/s would be 3,571 ms
    "ibroker": {"filter_ms_mean": 3384.0, "pubs_per_s": 0.28, "kb_per_s": 0.18, "index_mb": 313.0},
}

EXIT_MISMATCH = 3






@dataclass
class Workload:
    """The parsed queries of one FT_pr, in registration order."""

    ft_pr: int
    ids: list[str]
    queries: list  # rtf.query.model.Query, parsed once
    subscribers: list[str | None]
    texts: list[str]
    rejected: int = 0  # generated queries the parser refused (replaced by others)

    @property
    def version3(self) -> int:
        """Queries beyond the version-2 fragment (spec section 5), answered by their algebra."""
        return sum(q.algebra is not None for q in self.queries)

    @property
    def unindexed(self) -> int:
        """Version-3 queries that require no triple: evaluated on every publication."""
        return sum(q.algebra is not None and not q.branches for q in self.queries)


@dataclass
class BenchParams:
    publications: list[str]
    db: list[int] = field(default_factory=lambda: list(DEFAULT_DB))
    ft_pr: list[int] = field(default_factory=lambda: [50])
    algorithms: list[str] = field(default_factory=lambda: list(DEFAULT_ALGORITHMS))
    pubs: int = DEFAULT_PUBS
    ibroker_pubs: int | None = None
    naive_pubs: int | None = None
    seed: int = 0
    step: int | None = None
    taxonomy: str | None = None
    queries: str | None = None
    isolate: bool = True
    memory: bool = True
    mix_name: str = "paper"  # a workload of rtf.bench.workload.MIXES, "values" or a shape family
    v3_share: float | None = None  # the share of version-3 queries (None: the mix's own)
    index_cache: str | None = None  # a folder of saved engines reused across runs

    def step_size(self) -> int:
        return self.step or self.db[0]

    def pubs_for(self, algorithm: str) -> int:
        limit = {"ibroker": self.ibroker_pubs, "naive": self.naive_pubs}.get(algorithm)
        return min(self.pubs, limit) if limit else self.pubs


def load_publications(paths: Sequence[str]) -> list:
    from rtf.io.reader import read_publications
    return list(progress(read_publications(list(paths)), "reading", unit="pub"))


def sample_publications(pubs: list, n: int, seed: int) -> list:
    """`n` publications in a random order fixed by `seed`: every prefix is a random sample."""
    rng = random.Random(f"rtf-bench-publications-{seed}")
    return rng.sample(pubs, min(n, len(pubs)))


def parse_workload(records: list[dict], ft_pr: int, n: int,
                   more: Callable[[int, int], list[dict]] | None = None) -> Workload:
    """Parse `records` once; a query the parser refuses is replaced by a fresh one from `more`."""
    from rtf.parser import parse_query

    wl = Workload(ft_pr, [], [], [], [])
    batch, round_ = records, 0
    while True:
        for rec in progress(batch, f"parsing FT_pr={ft_pr}%", unit="q"):
            if len(wl.ids) == n:
                break
            try:
                q = parse_query(rec["query"])
            except QueryError:
                wl.rejected += 1
                continue
            wl.ids.append(str(rec["id"]) if rec.get("id") is not None else f"q{len(wl.ids) + 1}")
            wl.queries.append(q)
            wl.subscribers.append(rec.get("subscriber"))
            wl.texts.append(rec["query"])
        if len(wl.ids) >= n or more is None:
            return wl
        round_ += 1
        if round_ > 20:
            raise RtfError(f"could not generate {n} parseable queries "
                           f"({wl.rejected} refused by the parser)")
        batch = more(round_, n - len(wl.ids))


def is_shape(mix_name: str) -> bool:
    """Whether `mix_name` is a shape family of `rtf.bench.shapes` (its own queries and publications)."""
    from rtf.bench.shapes import FAMILIES
    return mix_name in FAMILIES


def bench_mix(ft_pr: int, mix_name: str = "paper", v3_share: float | None = None):
    """The workload `mix_name` at FT_pr = `ft_pr` %.

    ``paper`` (the default): at most 4 tuples, 1-3 conjunctive terms,
    distinct properties; about 11 % of the queries match a DBpedia
    publication. ``selective``: the same shape with a class constraint and
    informative words, about 2 % (`rtf.bench.workload.Mix.selective`).

    Distinct predicates (rdf:type aside) keep out queries such as
    ``?s p ?o1 . ?s p ?o2 . ?s p ?o3`` whose solutions are the cube of a
    multi-valued property: on a football season with 90 ``dbp:stadium``
    values one of them alone costs seconds of join, in every engine alike.

    ``sparql11``: the selective queries, a share of them (`v3_share`, 0.2
    unless given) rewritten into SPARQL 1.1 queries around the same star
    (`rtf.bench.sparql11_workload`); at ``v3_share = 0`` the same base
    queries, all version 2.
    """
    from rtf.bench.workload import named_mix
    mix = named_mix(mix_name, ft_pr / 100)
    if v3_share is not None:
        mix.v3_share = v3_share
    return mix


def make_workload(params: BenchParams, vocab, taxonomy, ft_pr: int) -> Workload:
    from rtf.bench.workload import generate_queries

    n = params.db[-1]
    if params.queries:
        records = load_queries(params.queries)
        wl = parse_workload(records, ft_pr, n)
        if len(wl.ids) < n:
            raise RtfError(f"{params.queries} holds {len(wl.ids)} usable queries; "
                           f"--db asks for {n}")
        return wl
    if params.mix_name == "values":  # its own publications and queries: FT_pr is only a label
        from rtf.bench.values_workload import values_queries
        return parse_workload(values_queries(n, seed=params.seed), ft_pr, n)
    if is_shape(params.mix_name):  # a shape family (rtf.bench.shapes): vocab is its ShapeSources
        from rtf.bench.shapes import shape_queries

        def more_shapes(round_: int, k: int) -> list[dict]:
            return shape_queries(vocab, params.mix_name, k, params.seed + 1000 * round_, ft_pr / 100,
                                 prefix=f"{params.mix_name}-{round_}-")

        return parse_workload(more_shapes(0, n), ft_pr, n, more_shapes)
    mix = bench_mix(ft_pr, params.mix_name, params.v3_share)

    def more(round_: int, k: int) -> list[dict]:
        return generate_queries(vocab, k, seed=params.seed + 1000 * round_, mix=mix,
                                taxonomy=taxonomy, prefix=f"g{round_}_")

    records = generate_queries(vocab, n, seed=params.seed, mix=mix, taxonomy=taxonomy)
    return parse_workload(records, ft_pr, n, more)


def chunks(db: Sequence[int], step: int) -> list[tuple[int, int]]:
    """(start, end) registration steps: every `step` queries and at every DB size."""
    cuts = set(db) | set(range(step, db[-1], step))
    out, start = [], 0
    for end in sorted(cuts):
        out.append((start, end))
        start = end
    return out
