"""Who may do what: bearer tokens and their roles (``rtf serve --tokens FILE``).

The tokens file has one token per line and the role it grants; blank lines
and ``#`` comments are ignored::

    s3cr3t-admin-token       admin
    s3cr3t-publisher-token   publisher
    s3cr3t-alice-token       subscriber:alice

`admin` may do everything; `publisher` may post publications; a
``subscriber:NAME`` token may register, read and delete NAME's queries and
read NAME's stream. Tokens are kept as SHA-256 digests and looked up by the
digest of the presented token, so a lookup's timing says nothing of a token.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from rtf.errors import RtfError

ROLES = ("admin", "publisher", "subscriber")

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
            elif role not in ("admin", "publisher"):
                raise TokensFileError(f"{path}:{n}: unknown role {role!r}; use admin, publisher "
                                      "or subscriber:NAME")
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
