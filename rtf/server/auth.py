"""Who may do what: bearer tokens and their roles (``rtf serve --tokens FILE``).

The tokens file has one token per line and the role it grants; blank lines
and ``#`` comments are ignored::

    s3cr3t-admin-token       admin
    s3cr3t-publisher-token   publisher
    s3cr3t-alice-token       subscriber:alice
    s3cr3t-scraper-token     metrics

`admin` may do everything; `publisher` may post publications; a
``subscriber:NAME`` token may register, read and delete NAME's queries and
read NAME's stream; `metrics` may read ``/metrics`` (a Prometheus scraper).
Tokens are kept as SHA-256 digests and looked up by the digest of the
presented token, so a lookup's timing says nothing of a token.

A browser's ``EventSource`` cannot send an Authorization header, and a
long-lived token must never travel in a URL: `Tickets` signs short-lived
stream tickets instead (``POST /subscribers/{name}/tickets``), each opening
one subscriber's stream for `TICKET_TTL_S` seconds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from rtf.errors import RtfError
from rtf.server.config import TICKET_TTL_S

ROLES = ("admin", "publisher", "subscriber", "metrics")

#: Longest subscriber name, and query id, in characters.
MAX_NAME_CHARS = 1024


class TokensFileError(RtfError):
    """A tokens file that cannot be used (the line says why)."""


@dataclass(frozen=True)
class Principal:
    """Whom a request comes from: a role, and for a subscriber its name."""

    role: str
    subscriber: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def may_publish(self) -> bool:
        return self.role in ("admin", "publisher")

    def may_read_metrics(self) -> bool:
        return self.role in ("admin", "metrics")

    def may_act_for(self, subscriber: str | None) -> bool:
        """Whether it may touch `subscriber`'s queries and stream."""
        return self.is_admin or (self.role == "subscriber" and subscriber == self.subscriber)

    def __str__(self) -> str:
        return f"subscriber:{self.subscriber}" if self.role == "subscriber" else self.role


#: Everyone is admin when the server runs without --tokens.
ANYONE = Principal("admin")


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class Tokens:
    """The tokens of a tokens file, by digest."""

    def __init__(self, principals: dict[bytes, Principal]):
        self._principals = principals

    @classmethod
    def from_file(cls, path: str | Path) -> "Tokens":
        try:
            text = Path(path).read_text(encoding="utf-8-sig")  # an editor's BOM is no token
        except (OSError, UnicodeDecodeError) as e:
            raise TokensFileError(f"cannot read the tokens file {path}: {e}") from None
        principals: dict[bytes, Principal] = {}
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise TokensFileError(f"{path}:{n}: expected 'TOKEN ROLE', got {len(parts)} field(s)")
            token, role = parts
            if len(token) < 16:
                raise TokensFileError(f"{path}:{n}: a token needs at least 16 characters")
            name = None
            if role.startswith("subscriber:"):
                role, name = "subscriber", role.split(":", 1)[1]
                if not 1 <= len(name) <= MAX_NAME_CHARS:
                    raise TokensFileError(f"{path}:{n}: 'subscriber:' needs a subscriber name of "
                                          f"1 to {MAX_NAME_CHARS} characters")
            elif role not in ("admin", "publisher", "metrics"):
                raise TokensFileError(f"{path}:{n}: unknown role {role!r}; use admin, publisher, "
                                      "metrics or subscriber:NAME")
            if _digest(token) in principals:
                raise TokensFileError(f"{path}:{n}: this token is already listed")
            principals[_digest(token)] = Principal(role, name)
        if not principals:
            raise TokensFileError(f"{path}: no tokens (every request would be refused)")
        return cls(principals)

    def principal(self, token: str) -> Principal | None:
        """The principal of `token`, or None if it is unknown."""
        return self._principals.get(_digest(token))

    def __len__(self) -> int:
        return len(self._principals)


class Tickets:
    """Short-lived stream tickets: ``EXPIRES.SIGNATURE``, an HMAC-SHA256 of the
    expiry time and the subscriber's name under a key made when the server
    starts (a restart voids every ticket)."""

    def __init__(self, ttl: float = TICKET_TTL_S, key: bytes | None = None, clock=time.time):
        self.ttl = ttl
        self._key = key if key is not None else secrets.token_bytes(32)
        self._clock = clock

    def _sign(self, expires: int, subscriber: str) -> str:
        mac = hmac.new(self._key, f"{expires}\n{subscriber}".encode("utf-8"), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def issue(self, subscriber: str) -> tuple[str, int]:
        """A ticket for `subscriber`'s stream, and when it expires (Unix seconds)."""
        expires = int(self._clock() + self.ttl)
        return f"{expires}.{self._sign(expires, subscriber)}", expires

    def check(self, ticket: str, subscriber: str) -> bool:
        """Whether `ticket` opens `subscriber`'s stream now."""
        expires, _, signature = ticket.partition(".")
        if not (expires.isascii() and expires.isdigit() and signature.isascii()) or len(expires) > 12:
            return False
        return (int(expires) >= self._clock()
                and hmac.compare_digest(signature, self._sign(int(expires), subscriber)))
