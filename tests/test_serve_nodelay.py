"""`rtf serve`'s listening socket gives its connections TCP_NODELAY.

asyncio sets TCP_NODELAY on a connection only when the socket says it is
TCP (``sock.proto == IPPROTO_TCP``); a socket made as
``socket(AF_INET, SOCK_STREAM)`` says proto 0, and its accepted
connections inherit that. Without TCP_NODELAY the server's two writes of
an answer (head, then body) meet Nagle's algorithm and the client's
delayed ACK: every answer waited ~40 ms on loopback (GET /health 44 ms
instead of 0.7 ms; the load benchmark, docs/benchmarks.md, "rtf serve
under load").
"""

from __future__ import annotations

import asyncio
import socket

from rtf.server.command import _listen


def test_accepted_connections_have_tcp_nodelay():
    sock = _listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    seen: list[int] = []

    class Probe(asyncio.Protocol):
        def connection_made(self, transport):
            conn = transport.get_extra_info("socket")
            seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    async def main():
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Probe, sock=sock)  # as uvicorn serves `sockets=`
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(200):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(main())
    assert seen and seen[0] != 0, "connections accepted by rtf serve lack TCP_NODELAY"
