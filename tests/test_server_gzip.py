"""Issue 40, item 5: request bodies sent with ``Content-Encoding: gzip`` are read
(they were matched as the compressed bytes: "bad RDF: ... '\\x1f' is not allowed
at the beginning of a prefix name"), any other coding is a ``415`` naming the one
the server reads, and ``--max-body`` holds for what comes out of the gzip: a bomb
is refused once the limit is passed, before it fills the memory.

A real server (`rtf.server.process`) for what goes over the wire; `Gunzip` on its
own against Python's gzip module for any data, cut anywhere.
"""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

httpx = pytest.importorskip("httpx")
psutil = pytest.importorskip("psutil")

from rtf.server.encodings import PIECE, CodingError, Gunzip, codings  # noqa: E402
from rtf.server.process import ServerProcess  # noqa: E402

EX = "http://ex.org/gz/"
NT = "application/n-triples"
MAX_BODY = 1 << 20


def rdf(n: int) -> bytes:
    return "".join(f'<{EX}s{i}> <{EX}title> "Games in Rio, number {i}" .\n'
                   for i in range(n)).encode()


QUERY = f'SELECT ?s WHERE {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "rio") }}'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(tmp_path_factory.mktemp("gz") / "data", "--max-body", MAX_BODY) as s:
        yield s


def one_line(r: httpx.Response, status: int, *words: str) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    message = r.json()["error"]
    assert "\n" not in message and all(w in message for w in words), message
    return message


def pieces(data: bytes, size: int = 1000):
    """`data` sent chunked: no Content-Length."""
    for i in range(0, len(data), size):
        yield data[i:i + size]


def test_gzip_bodies_are_read_as_the_same_bodies_uncompressed(server):
    with server.client() as http:
        put = json.dumps({"query": QUERY, "subscriber": "gz"}).encode()
        r = http.put("/queries/gz-rio", content=gzip.compress(put),
                     headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
        assert r.status_code == 201, r.text
        lines = json.dumps({"id": "gz-more", "query": QUERY}).encode()
        r = http.post("/queries", content=gzip.compress(lines),
                      headers={"Content-Type": "application/x-ndjson", "Content-Encoding": "x-gzip"})
        assert r.json()["created"] == 1, r.text
        body = rdf(300)
        plain = http.post("/publications", content=body, headers={"Content-Type": NT})
        assert plain.status_code == 200 and plain.headers["X-RTF-Matches"] == "600"
        for encoded, headers in [
                (gzip.compress(body), {"Content-Encoding": "gzip"}),
                (pieces(gzip.compress(body), 97), {"Content-Encoding": "GZIP, identity"}),
                # two members, as `cat a.gz b.gz` makes
                (gzip.compress(body[:5000]) + gzip.compress(body[5000:]), {"Content-Encoding": "gzip"}),
                (body, {"Content-Encoding": "identity"})]:
            r = http.post("/publications", content=encoded, headers={"Content-Type": NT, **headers})
            assert r.status_code == 200, r.text
            assert r.text == plain.text


@pytest.mark.parametrize("coding", ["br", "deflate", "zstd", "gzip, gzip", "compress"])
def test_another_coding_is_415_saying_which_the_server_reads(server, coding):
    with server.client() as http:
        r = http.post("/publications", content=b"x", headers={"Content-Type": NT,
                                                              "Content-Encoding": coding})
        one_line(r, 415, f"Content-Encoding: {coding}", "gzip")
        assert r.headers["Accept-Encoding"] == "gzip"


def test_a_body_that_is_not_its_gzip_is_400_and_a_gzip_body_without_the_header_is_told(server):
    body = gzip.compress(rdf(50))
    with server.client() as http:
        for content, says in [(body[:-9], "cut short"), (b"not gzip at all", "not the gzip data"),
                              (body + b"trailing", "not the gzip data")]:
            r = http.post("/publications", content=content,
                          headers={"Content-Type": NT, "Content-Encoding": "gzip"})
            one_line(r, 400, says)
        r = http.post("/publications", content=body, headers={"Content-Type": NT})
        message = one_line(r, 400, "bad N-Triples", "gzip-compressed", "Content-Encoding: gzip")
        assert "prefix name" not in message
        r = http.post("/publications", content=b"\x01<a> <b> <c> .\n", headers={"Content-Type": NT})
        assert one_line(r, 400) == r"bad N-Triples: <body>:1: '\x01' cannot begin a term (column 1)"
        r = http.post("/publications", content=b"<a> <b> .\n", headers={"Content-Type": "text/turtle"})
        one_line(r, 400, "bad Turtle: <body>:1: ")


def bomb(size: int) -> bytes:
    """`size` zero bytes, gzip-compressed (about a thousandth of it)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return b"".join([*(z.compress(block) for _ in range(size >> 20)), z.flush()])


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_at_the_limit_without_filling_the_memory(server):
    """1 GiB of zeros in 1 MiB of gzip (under --max-body as sent): refused once 1 MiB has
    come out, and the server's memory does not grow by the gigabyte."""
    data = bomb(1 << 30)
    assert len(data) < MAX_BODY
    process = psutil.Process(server.pid)
    before = process.memory_info().rss
    with server.client() as http:
        for content in (data, pieces(data, 64 << 10)):
            r = http.post("/publications", content=content,
                          headers={"Content-Type": NT, "Content-Encoding": "gzip"})
            one_line(r, 413, "once decompressed", f"{MAX_BODY} bytes", "--max-body")
        grown = process.memory_info().rss - before
        assert grown < 64 << 20, f"the server grew by {grown >> 20} MiB"
        # compressed over the limit: refused as sent (with or without a length)
        big = gzip.compress(bytes(range(256)) * (MAX_BODY // 64), compresslevel=0)
        for content in (big, pieces(big, 64 << 10)):
            r = http.post("/publications", content=content,
                          headers={"Content-Type": NT, "Content-Encoding": "gzip"})
            one_line(r, 413, f"{MAX_BODY} bytes")
        assert server.health()["status"] == "ok"


# ---------------------------------------------------------------- Gunzip


@settings(max_examples=200, deadline=None)
@given(members=st.lists(st.one_of(st.binary(max_size=3000), st.integers(0, 3 * PIECE)),
                        min_size=1, max_size=3),
       cuts=st.lists(st.integers(1, 4000), min_size=1, max_size=8))
def test_fuzz_gunzip_gives_what_gzip_gives_whatever_the_pieces(members, cuts):
    """Any members (random bytes, or runs of one byte that inflate past a piece) sent in
    any pieces: the same bytes as Python's gzip, no piece over PIECE; cut short anywhere
    inside a member: a CodingError at the end."""
    datas = [m if isinstance(m, bytes) else b"a" * m for m in members]
    each = [gzip.compress(d) for d in datas]
    compressed = b"".join(each)
    ends = {sum(len(c) for c in each[:i + 1]) for i in range(len(each))}
    got = []
    g = Gunzip()
    at = 0
    for n in cuts * (len(compressed) // sum(cuts) + 1):
        for piece in g.feed(compressed[at:at + n]):
            assert 0 < len(piece) <= PIECE
            got.append(piece)
        at += n
        if at >= len(compressed):
            break
    g.finish()
    assert b"".join(got) == gzip.decompress(compressed) == b"".join(datas)
    short = Gunzip()
    cut = cuts[0] % len(compressed) or 1
    cut -= cut in ends  # inside a member (one is 20 bytes at least)
    for _ in short.feed(compressed[:cut]):
        pass
    with pytest.raises(CodingError, match="cut short"):
        short.finish()


def test_codings_of_a_header():
    assert codings("gzip") == codings(" x-gzip ") == codings("identity, GZip") == ["gzip"]
    assert codings("") == codings("identity") == []
    assert codings("deflate, gzip") == ["deflate", "gzip"]


def test_the_module_docstring_example():
    import doctest

    from rtf.server import encodings
    assert doctest.testmod(encodings).failed == 0


def test_a_client_that_compresses_gets_what_one_that_does_not_gets(server):
    from rtf import Client

    body = rdf(300)
    with Client(server.url) as plain, Client(server.url, compress=True) as packed:
        lines = [(QUERY, f"gz-many-{i}", "gz") for i in range(50)]
        assert packed.register_many(lines)["created"] == 50
        assert packed.get("gz-many-7")["subscriber"] == "gz"
        assert packed.register(QUERY, "gz-meta", metadata={"note": "n" * 5000})["created"]
        assert plain.get("gz-meta")["metadata"] == {"note": "n" * 5000}
        got = packed.publish(body)
        # every query of this server is QUERY: each matches each of the 300 publications
        assert got == plain.publish(body) and len(got) == 300 * plain.health()["queries"]
