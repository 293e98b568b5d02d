"""Index file bodies taken apart and put together again, for the tests of hostile files.

`body(data)` reads a saved index's body (JSON lines, in the file's ``body`` section) into one
dict -- the head line's fields, ``values`` (every value line's entries) and
``queries`` -- which a test damages; `with_body(content)` writes such a dict
back as a body of lines (the head, one line of values, one of queries) in a
file with a correct checksum, so that the damage reaches the decoder.
"""

from __future__ import annotations

import json
import zlib

from rtf.io import sections, store


def packed_body(data: bytes) -> tuple[bytes, int]:
    """(the body as stored, its length once decompressed) of a saved index."""
    arrays = sections.unpack(data, store.FORMAT_VERSION).arrays
    return arrays["body"].tobytes(), int(arrays["body_length"][0])


def body(data: bytes) -> dict:
    lines = [json.loads(line) for line in zlib.decompress(packed_body(data)[0]).split(b"\n") if line]
    content = dict(lines[0])
    content["values"] = [entry for line in lines[1:] for entry in line.get("values", ())]
    content["queries"] = [entry for line in lines[1:] for entry in line.get("queries", ())]
    return content


def raw_body(content) -> bytes:
    if not isinstance(content, dict):
        return json.dumps(content).encode() + b"\n"
    head = {k: v for k, v in content.items() if k not in ("values", "queries")}
    lines = [head] + [{k: content[k]} for k in ("values", "queries") if k in content]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def wrap(packed: bytes, raw_length: int, version: int = store.FORMAT_VERSION) -> bytes:
    """A file around a stored body, with a correct checksum (and no signature: a foreign file)."""
    return sections.pack(version, store.body_sections(packed, raw_length), sign=False)


def with_raw(raw: bytes, version: int = store.FORMAT_VERSION) -> bytes:
    return wrap(zlib.compress(raw), len(raw), version)


def with_body(content, version: int = store.FORMAT_VERSION) -> bytes:
    return with_raw(raw_body(content), version)


def unsigned(data: bytes) -> bytes:
    """A saved index as another installation would hand it over: the same sections, unsigned
    (loaded the checked way: every model decoded, checked and registered again)."""
    return sections.pack(store.FORMAT_VERSION, sections.unpack(data, store.FORMAT_VERSION).arrays, sign=False)


def assert_answers_as_the_reference(engine, pubs) -> None:
    """`engine` answers `pubs` as the naive engine with its queries (uncapped): the same
    matches with the same solutions, but where docs/limits.md lets a capped engine answer
    less. A `truncated` match holds `max_solutions` of the reference's solutions (which
    ones is unspecified). Its join work is bounded too: `max_solutions` x
    `JOIN_ROWS_PER_SOLUTION` rows at any step. So where a join may be cut -- where the
    publication's triples to the power of the query's patterns pass the bound (a `*`
    pattern with a cap of 3 keeps 30 rows, of which one or none may pass a FILTER) -- a
    truncated match may hold fewer, and a query none of whose kept rows passed is not
    reported."""
    from rtf import Engine
    from rtf.matching.solutions import JOIN_ROWS_PER_SOLUTION
    reference = Engine("naive", taxonomy=engine.taxonomy)  # uncapped: every solution
    reference.register_parsed([(rq.query, rq.id, rq.subscriber) for rq in engine.queries()])
    bound = engine.max_solutions * JOIN_ROWS_PER_SOLUTION

    def may_be_cut(query_id: str, pub) -> bool:
        patterns = len(engine.get(query_id).query.patterns)
        return not patterns or len(pub) ** patterns > bound  # (a version-3 query: no patterns)

    for pub in pubs:
        full = {m.query_id: m for m in reference.match(pub)}
        found = engine.match(pub)
        ids = [m.query_id for m in found]
        assert ids == sorted(set(ids) & set(full))  # nothing the reference does not match
        missing = [q for q in full if q not in set(ids)]
        assert all(may_be_cut(q, pub) for q in missing), missing
        for m in found:
            expected = full[m.query_id]
            assert (m.subscriber, m.is_ask) == (expected.subscriber, expected.is_ask)
            if m.truncated:
                assert m.solutions <= expected.solutions
                most = min(engine.max_solutions, len(expected.solutions))
                assert (0 < len(m.solutions) <= most if may_be_cut(m.query_id, pub)
                        else len(m.solutions) == most)
            else:
                assert m.solutions == expected.solutions


def altered_and_signed(data: bytes, prefixes: tuple[str, ...], draw) -> bytes:
    """`data` (a saved index) with one to three bits flipped in its sections named with one of
    `prefixes`, maybe one of them cut short, signed again with this installation's key (as
    someone holding it could): `draw` is a hypothesis ``data.draw``."""
    import numpy as np
    from hypothesis import strategies as st

    arrays = {name: array.copy() for name, array in sections.unpack(data, store.FORMAT_VERSION).arrays.items()}
    names = sorted(name for name, array in arrays.items() if name.startswith(prefixes) and array.size)
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(names))
        flat = arrays[name].reshape(-1).view(np.uint8)
        at = draw(st.integers(0, len(flat) - 1))
        flat[at] ^= draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]))
    if draw(st.booleans()):  # a section cut short
        name = draw(st.sampled_from(names))
        arrays[name] = arrays[name][:-1]
    return sections.pack(store.FORMAT_VERSION, arrays, sign=True)


def loaded_or_refused(data: bytes):
    """The engine of the index `data` (named f.idx), or None when it is refused with one
    line that names the file, as a damaged file must be."""
    from rtf import Engine
    from rtf.errors import IndexFileError

    try:
        return Engine.from_bytes(data, "f.idx")
    except IndexFileError as e:
        assert "\n" not in str(e) and str(e).startswith("f.idx: ")
        return None
