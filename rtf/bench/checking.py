"""Comparing the engines' answers, and finding the smallest query and publication that show a difference.
"""


from __future__ import annotations

from rtf.bench.inputs import Workload
from rtf.bench.timing import combined_digest, register_range


def compare_answers(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(agreements, mismatches) per (FT_pr, DB) on the publications every algorithm saw."""
    groups: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["ft_pr"], r["db"]), []).append(r)
    agreements, mismatches = [], []
    for (ft_pr, db), group in sorted(groups.items()):
        common = min(r["publications"] for r in group)
        for r in group:
            r["common_publications"] = common
            r["common_matches"] = sum(r["_counts"][:common])
            r["common_digest"] = combined_digest(r["_digests"][:common])
        ref = group[0]
        differing = [r for r in group[1:] if r["common_digest"] != ref["common_digest"]]
        if not differing:
            agreements.append({"ft_pr": ft_pr, "db": db, "publications": common,
                               "matches": ref["common_matches"], "digest": ref["common_digest"],
                               "algorithms": [r["algorithm"] for r in group]})
            continue
        for r in differing:
            first = next(i for i in range(common) if r["_digests"][i] != ref["_digests"][i])
            mismatches.append({"ft_pr": ft_pr, "db": db, "publications": common,
                               "algorithms": [ref["algorithm"], r["algorithm"]],
                               "matches": [ref["common_matches"], r["common_matches"]],
                               "first_publication_index": first})
    return agreements, mismatches


def diagnose(mismatch: dict, wl: Workload, pubs: list, taxonomy) -> dict:
    """Find the queries two engines disagree on, and the smallest reproduction."""
    from rtf.engine import Engine

    a, b = mismatch["algorithms"]
    pub = pubs[mismatch["first_publication_index"]]
    engines = {}
    for alg in (a, b):
        engines[alg] = Engine(alg, taxonomy=taxonomy)
        register_range(engines[alg], wl, 0, mismatch["db"])
    answers = {alg: {m.query_id: m.solutions for m in e.match(pub)} for alg, e in engines.items()}
    ids = sorted(set(answers[a]) | set(answers[b]))
    differing = [q for q in ids if answers[a].get(q) != answers[b].get(q)]
    out = {"publication": pub.id, "differing_queries": differing[:20],
           "differing_count": len(differing)}
    position = {q: i for i, q in enumerate(wl.ids)}
    for qid in differing:
        i = position[qid]
        alone = {}
        for alg in (a, b):
            e = Engine(alg, taxonomy=taxonomy)
            e.register(wl.queries[i], qid)
            alone[alg] = sorted(sorted(m.solutions) for m in e.match(pub))
        if alone[a] != alone[b]:
            out["reproduction"] = {
                "query": wl.texts[i],
                "publication": "\n".join(f"{s} {p} {o} ." for s, p, o in pub.triples),
                a: alone[a], b: alone[b]}
            break
    else:
        out["reproduction"] = None  # each query alone agrees: it takes several to differ
    return out
