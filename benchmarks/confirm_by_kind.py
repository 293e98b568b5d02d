"""Confirmation cost per kind of version-3 query of the sparql11 mix (docs/benchmarks.md):
candidates, matches and seconds of confirmation per publication, for 100K queries and 300
publications of the DBpedia sample. Measures only: the engine's matches are not kept.

    python benchmarks/confirm_by_kind.py
"""
import random, time, collections
from rtf.io import datasets
from rtf.io.reader import read_publications
from rtf.bench.inputs import sample_publications
from rtf.bench.workload import Mix, Vocabulary, _Builder
from rtf.bench.sparql11_workload import Version3Builder
from rtf.engine import Engine
import rtf.matching.confirm as confirm

pubs = list(read_publications(datasets.dbpedia_files()))
builder = Version3Builder(_Builder(Vocabulary(pubs), random.Random(0), Mix.sparql11()), 0)
engine, kind_of = Engine("rtfs"), {}
for i in range(1, 100_001):
    engine.register(builder.query(), f"g{i}")
    kind_of[f"g{i}"] = builder.last_kind
stats, run = collections.defaultdict(lambda: [0, 0, 0.0]), confirm.run
def answers(self, candidates, limit, out, truncated, original=confirm.Confirmation.answers):
    for qid, algebra in candidates:   # one at a time, timed
        t = time.perf_counter()
        found = run(algebra, self.dataset)
        s = stats[kind_of[qid]]
        s[0] += 1; s[1] += found is not None; s[2] += time.perf_counter() - t
    return original(self, [], limit, out, truncated)
confirm.Confirmation.answers = answers   # measures only: the engine's matches are not kept
for p in sample_publications(pubs, 300, 0):
    engine.match(p)
for kind, (c, m, s) in sorted(stats.items(), key=lambda kv: -kv[1][2]):
    print(kind, c / 300, m / 300, s / 300)
