"""The reader: RDF files in, publications out (one behaviour per test).

Small files are written to tmp_path; the DBpedia sample is read through
`rtf.io.datasets` and the tests that need it skip when it is absent.
"""

from __future__ import annotations

import bz2
import gzip
import io
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtf.io import datasets, reader
from rtf.errors import PublicationError
from rtf.io.reader import ReadStats, parse_ntriples_lines, read_publications
from rtf.query.terms import RDF_TYPE, iri_key, rdflib_key

EX = "http://ex/"


def nt(s: str, p: str, o: str, g: str | None = None) -> str:
    """One N-Triples (or N-Quads, with `g`) line over ex: local names; `o` may be a literal."""
    obj = o if o.startswith('"') else f"<{EX}{o}>"
    graph = f" <{EX}{g}>" if g else ""
    return f"<{EX}{s}> <{EX}{p}> {obj}{graph} .\n"


def write(path, text: str):
    """Write `text` to `path`, compressed as its suffix says."""
    data = text.encode()
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    with opener(path, "wb") as f:
        f.write(data)
    return path


def ids(pubs) -> list[str]:
    return [p.id for p in pubs]


def key(local: str) -> str:
    return f"<{EX}{local}>"


# ------------------------------------------------------------------ grouping


def test_consecutive_triples_with_one_subject_are_one_publication(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + nt("a", "q", "b") + nt("b", "p", '"2"'))
    pubs = list(read_publications(f))
    assert ids(pubs) == [EX + "a", EX + "b"]
    assert pubs[0].triples == ((key("a"), key("p"), '"1"'), (key("a"), key("q"), key("b")))


def test_a_subject_that_comes_back_later_starts_a_new_publication(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + nt("b", "p", '"2"') + nt("a", "p", '"3"'))
    assert ids(read_publications(f)) == [EX + "a", EX + "b", EX + "a"]


def test_a_blank_node_subject_is_the_publication_id(tmp_path):
    f = write(tmp_path / "a.nt", f'_:b1 <{EX}p> "1" .\n')
    assert ids(read_publications(f)) == ["_:b1"]


def test_a_publication_holds_each_triple_once(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') * 3)
    assert len(next(read_publications(f))) == 1


def test_terms_become_canonical_keys(tmp_path):
    xsd_string = '"s"^^<http://www.w3.org/2001/XMLSchema#string>'
    f = write(tmp_path / "a.nt", nt("a", "p", xsd_string) + nt("a", "p", '"chat"@FR'))
    objects = [o for _, _, o in next(read_publications(f)).triples]
    assert objects == ['"s"', '"chat"@fr']


def test_publications_never_span_files(tmp_path):
    one = write(tmp_path / "1.nt", nt("a", "p", '"1"'))
    two = write(tmp_path / "2.nt", nt("a", "p", '"2"'))
    assert [len(p) for p in read_publications([one, two])] == [1, 1]


def test_several_files_are_read_in_the_order_given(tmp_path):
    one = write(tmp_path / "1.nt", nt("a", "p", '"1"'))
    two = write(tmp_path / "2.nt", nt("b", "p", '"2"'))
    assert ids(read_publications([two, one])) == [EX + "b", EX + "a"]


def test_one_path_may_be_given_as_a_string(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"'))
    assert ids(read_publications(str(f))) == [EX + "a"]


def test_group_by_must_be_subject_or_graph(tmp_path):
    with pytest.raises(ValueError, match="group_by"):
        read_publications(write(tmp_path / "a.nt", ""), group_by="resource")


# ------------------------------------------------------------------- formats


@pytest.mark.parametrize("suffix", [".nt", ".nt.gz", ".nt.bz2"])
def test_plain_gzip_and_bz2_files_read_alike(tmp_path, suffix):
    f = write(tmp_path / ("data" + suffix), nt("a", "p", '"1"') + nt("b", "p", '"2"'))
    assert ids(read_publications(f)) == [EX + "a", EX + "b"]


def test_turtle_is_grouped_by_subject(tmp_path):
    f = write(tmp_path / "a.ttl.gz",
              f'@prefix e: <{EX}> .\ne:a e:p "1" ; e:q e:b .\ne:b e:p "2" .\n')
    assert [(p.id, len(p)) for p in read_publications(f)] == [(EX + "a", 2), (EX + "b", 1)]


def test_nquads_grouped_by_graph_make_one_publication_per_graph(tmp_path):
    f = write(tmp_path / "a.nq", nt("a", "p", '"1"', "g1") + nt("b", "p", '"2"', "g1")
              + nt("c", "p", '"3"', "g2"))
    pubs = list(read_publications(f, group_by="graph"))
    assert [(p.id, len(p)) for p in pubs] == [(EX + "g1", 2), (EX + "g2", 1)]
    assert pubs[0].triples[1] == (key("b"), key("p"), '"2"')


def test_nquads_grouped_by_subject_ignore_the_graphs(tmp_path):
    f = write(tmp_path / "a.nq", nt("a", "p", '"1"', "g1") + nt("a", "p", '"2"', "g2"))
    assert [(p.id, len(p)) for p in read_publications(f)] == [(EX + "a", 2)]


def test_default_graph_triples_grouped_by_graph_fall_back_to_their_subject(tmp_path):
    # A triple about g1 in the default graph is not part of graph g1.
    f = write(tmp_path / "a.nq", nt("a", "p", '"1"') + nt("a", "q", '"2"') + nt("g1", "p", '"m"')
              + nt("x", "p", '"3"', "g1"))
    assert [(p.id, len(p)) for p in read_publications(f, group_by="graph")] == [
        (EX + "a", 2), (EX + "g1", 1), (EX + "g1", 1)]


def test_trig_grouped_by_graph(tmp_path):
    f = write(tmp_path / "a.trig", f'@prefix e: <{EX}> .\ne:g1 {{ e:a e:p "1" . e:b e:p "2" }}\n'
                                   f'e:g2 {{ e:c e:p "3" }}\n')
    assert [(p.id, len(p)) for p in read_publications(f, group_by="graph")] == [
        (EX + "g1", 2), (EX + "g2", 1)]


def test_format_overrides_the_suffix_and_compression_still_comes_from_it(tmp_path):
    f = write(tmp_path / "dump.txt.gz", nt("a", "p", '"1"'))
    assert ids(read_publications(f, format="ntriples")) == [EX + "a"]


def test_an_unknown_suffix_is_an_error_before_reading(tmp_path):
    with pytest.raises(PublicationError, match="format"):
        read_publications(tmp_path / "dump.txt")


@pytest.mark.parametrize("fmt, compress", [(None, False), ("nt.gz", True)])
def test_dash_reads_stdin_as_ntriples(monkeypatch, fmt, compress):
    data = nt("a", "p", '"1"').encode()
    stdin = io.TextIOWrapper(io.BytesIO(gzip.compress(data) if compress else data))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert ids(read_publications("-", format=fmt)) == [EX + "a"]


# ------------------------------------------------------------------- errors


def test_a_malformed_line_raises_with_file_and_line(tmp_path):
    unterminated = f'<{EX}a> <{EX}p> "open .\n'
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + unterminated + nt("b", "p", '"2"'))
    with pytest.raises(PublicationError) as raised:
        list(read_publications(f))
    assert (raised.value.source, raised.value.line) == (str(f), 2)
    assert f"{f}:2:" in str(raised.value)


def test_publications_before_a_malformed_line_are_read_first(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + nt("b", "p", '"2"') + "garbage\n")
    pubs = read_publications(f)
    assert next(pubs).id == EX + "a"
    with pytest.raises(PublicationError):
        next(pubs)


def test_a_missing_final_dot_is_blamed_on_its_own_line(tmp_path):
    # The parser only notices at the next line; the reader names the right one.
    no_dot = nt("a", "p", '"2"')[:-3] + "\n"
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + no_dot + nt("b", "p", '"3"'))
    with pytest.raises(PublicationError) as raised:
        list(read_publications(f))
    assert raised.value.line == 2


def test_line_numbers_stay_exact_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "CHUNK_BYTES", 100)  # many blocks, lines cut across them
    lines = [nt(f"s{i}", "p", f'"{i}"') for i in range(200)]
    lines[137] = "<not a triple\n"
    with pytest.raises(PublicationError) as raised:
        list(read_publications(write(tmp_path / "a.nt", "".join(lines))))
    assert raised.value.line == 138


def test_skip_invalid_skips_bad_lines_and_counts_them(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + "garbage\n" + nt("a", "p", '"2"')
              + f"<{EX}a> <{EX}p> <bad iri> .\n" + nt("b", "p", '"3"'))
    stats = ReadStats()
    pubs = list(read_publications(f, skip_invalid=True, stats=stats))
    assert [(p.id, len(p)) for p in pubs] == [(EX + "a", 2), (EX + "b", 1)]
    assert stats.skipped_lines == 2
    assert [(e.line, e.source) for e in stats.errors] == [(2, str(f)), (4, str(f))]


def test_skip_invalid_in_turtle_resumes_at_the_next_statement(tmp_path):
    f = write(tmp_path / "a.ttl", f'@prefix e: <{EX}> .\ne:a e:p "1" .\ne:b e:p <bad iri> .\n'
                                  'e:c e:p "3" .\n')
    stats = ReadStats()
    assert ids(read_publications(f, skip_invalid=True, stats=stats)) == [EX + "a", EX + "c"]
    assert stats.skipped_lines == 1 and stats.errors[0].line == 3


def test_a_truncated_gzip_file_is_a_publication_error(tmp_path):
    whole = gzip.compress("".join(nt(f"s{i}", "p", f'"{i} {i * i}"') for i in range(5000)).encode())
    f = tmp_path / "cut.nt.gz"
    f.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(PublicationError, match="cut.nt.gz"):
        list(read_publications(f))


# ------------------------------------------------------------ line handling


def test_a_last_line_without_newline_is_read(tmp_path):
    f = write(tmp_path / "a.nt", nt("a", "p", '"1"') + nt("b", "p", '"2"').rstrip("\n"))
    assert ids(read_publications(f)) == [EX + "a", EX + "b"]


def test_a_line_longer_than_a_block_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "CHUNK_BYTES", 16)
    f = write(tmp_path / "a.nt", nt("a", "p", '"' + "word " * 100 + '"') + nt("b", "p", '"2"'))
    assert ids(read_publications(f)) == [EX + "a", EX + "b"]


def test_reading_is_lazy(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "CHUNK_BYTES", 1000)
    f = write(tmp_path / "a.nt", "".join(nt(f"s{i}", "p", f'"{i}"') for i in range(1000)))
    stats = ReadStats()
    next(read_publications(f, stats=stats))
    assert stats.bytes_read <= 2000 < f.stat().st_size


def test_stats_count_files_triples_publications_and_bytes(tmp_path):
    text = nt("a", "p", '"1"') * 2 + nt("b", "p", '"2"')
    one, two = write(tmp_path / "1.nt", text), write(tmp_path / "2.nt.gz", text)
    stats = ReadStats()
    list(read_publications([one, two], stats=stats))
    assert (stats.files, stats.triples, stats.publications, stats.skipped_lines) == (2, 6, 4, 0)
    assert stats.bytes_read == 2 * len(text.encode())


# ---------------------------------------------------------- batches of lines


def test_parse_ntriples_lines_gives_key_triples():
    triples, bad = parse_ntriples_lines([nt("a", "p", '"1"@EN').strip(), nt("a", "q", "b").strip()])
    assert triples == [(key("a"), key("p"), '"1"@en'), (key("a"), key("q"), key("b"))]
    assert bad == 0


def test_parse_ntriples_lines_skips_and_counts_bad_lines():
    lines = [nt("a", "p", '"1"'), f'<{EX}a> <{EX}p> "open .', nt("b", "p", '"2"'),
             nt("c", "p", '"3"')[:-3], nt("d", "p", '"4"'), "", "# a comment"]
    triples, bad = parse_ntriples_lines(lines, source="part-0001")
    assert [s for s, _, _ in triples] == [key("a"), key("b"), key("d")]
    assert bad == 2


# One of each kind of bad line, including those the parser blames on the next line.
BAD_LINES = [
    f'<{EX}s> <{EX}p> "open .',
    f"<{EX}s> <{EX}p> <{EX}o>",
    f"<{EX}s> <{EX}p> <bad iri> .",
    f'<{EX}s> <{EX}p> "x" . trailing',
    f'"lit" <{EX}p> <{EX}o> .',
    f"<{EX}s> <{EX}p>",
    "garbage",
]
lines_and_truth = st.lists(st.one_of(st.integers(0, 99).map(lambda i: (True, i)),
                                     st.sampled_from(BAD_LINES).map(lambda b: (False, b))),
                           max_size=60)


@given(lines_and_truth)
def test_parse_ntriples_lines_keeps_exactly_the_good_lines_in_order(items):
    lines = [nt(f"s{x}", "p", f'"{x}"') if good else x for good, x in items]
    triples, bad = parse_ntriples_lines(lines)
    assert triples == [(key(f"s{x}"), key("p"), f'"{x}"') for good, x in items if good]
    assert bad == sum(1 for good, _ in items if not good)


def test_parse_ntriples_lines_of_an_empty_batch():
    assert parse_ntriples_lines([]) == ([], 0)


# ------------------------------------------------------- the DBpedia sample

# From the data README: resources (publications), triples, rdf:type triples.
SAMPLE = {
    "nordlys_dbpedia-2015-10_sample.nt.gz": (98, 2495, 547),
    "esbm_dbpedia-2015-10_descriptions.nt.gz": (100, 3422, 1576),
    "db8k28_dbpedia-2015-10_publications.nt.gz": (6607, 56509, 23055),
    "renlg_dbpedia-2016-04_long_abstracts.nt.gz": (801, 801, 0),
    "knowledgenet_dbpedia_abstracts.nt.gz": (460, 460, 0),
    "ml1m_dbpedia-2024_abstracts.nt.gz": (2344, 2344, 0),
}


def sample_file(name: str):
    path = datasets.dbpedia_dir() / name
    if not path.is_file():
        pytest.skip(f"DBpedia sample file {name} not found under {datasets.dbpedia_dir()} "
                    f"(set {datasets.ENV_VAR})")
    return path


@pytest.mark.parametrize("name", SAMPLE)
def test_sample_file_counts_match_the_data_readme(name):
    resources, triples, types = SAMPLE[name]
    pubs = list(read_publications(sample_file(name)))
    rdf_type = iri_key(RDF_TYPE)
    assert len(pubs) == resources
    assert len({p.id for p in pubs}) == resources  # each resource is one contiguous run
    assert sum(len(p) for p in pubs) == triples
    assert sum(1 for p in pubs for _, pred, _ in p.triples if pred == rdf_type) == types


def test_sample_keys_equal_rdflib_parsed_through_the_same_canonicaliser(monkeypatch):
    rdflib = pytest.importorskip("rdflib")
    # By default rdflib rewrites lexical forms ("1.35E7"^^xsd:double becomes
    # "13500000.0"); the reader, like the data, keeps them.
    monkeypatch.setattr(rdflib, "NORMALIZE_LITERALS", False)
    path = sample_file("nordlys_dbpedia-2015-10_sample.nt.gz")
    graph = rdflib.Graph().parse(data=gzip.decompress(path.read_bytes()), format="nt")
    expected = {(rdflib_key(s), rdflib_key(p), rdflib_key(o)) for s, p, o in graph}
    assert {t for p in read_publications(path) for t in p.triples} == expected


def test_parse_ntriples_lines_agrees_with_the_reader_on_the_sample():
    path = sample_file("esbm_dbpedia-2015-10_descriptions.nt.gz")
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    triples, bad = parse_ntriples_lines(lines)
    assert bad == 0
    assert triples == [t for p in read_publications(path) for t in p.triples]


# ---------------------------------------------------------------- live input


def test_follow_reads_what_is_appended_until_idle(tmp_path):
    import threading
    import time

    from rtf.io.reader import read_publications
    feed = tmp_path / "feed.nt"
    feed.write_text('<http://ex/a> <http://ex/p> "1" .\n')

    def append_later():
        time.sleep(0.3)
        with open(feed, "a") as f:
            f.write('<http://ex/b> <http://ex/p> "2" .\n')
    writer = threading.Thread(target=append_later)
    writer.start()
    pubs = list(read_publications(feed, follow=True, idle_timeout=1.0))
    writer.join()
    assert [p.id for p in pubs] == ["http://ex/a", "http://ex/b"]


@pytest.mark.parametrize("head, expected", [(b"\x1f\x8b\x08", "gz"), (b"BZh9", "bz2"),
                                            (b"<ht", None), (b"", None), (b"B", None)])
def test_live_stream_tells_compression_and_gives_back_its_first_bytes(head, expected):
    import io

    from rtf.io.sources import LiveStream
    stream = LiveStream(io.BytesIO(head + b"rest"))
    assert stream.peek_compression() == expected
    assert stream.read(2) + stream.read() == head + b"rest"
