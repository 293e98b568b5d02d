"""What ``rtf serve`` is told (`BrokerConfig`) and its defaults.

Plain Python, no server library: the command line reads the defaults for
its ``--help`` without importing the server stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from pathlib import Path

DEFAULT_PORT = 8750
#: Default: a snapshot after this many registrations and removals.
SNAPSHOT_EVERY = 10_000
#: Default largest request body, bytes.
MAX_BODY = 16 << 20
#: Default bound of a stream's queue, in events.
STREAM_QUEUE = 10_000
#: Default retention of the outbox: events per subscriber, and seconds.
MAX_EVENTS = 100_000
MAX_AGE_S = 7 * 24 * 3600
#: Seconds a stream ticket (``POST /subscribers/{name}/tickets``) opens streams for.
TICKET_TTL_S = 60


@dataclass
class BrokerConfig:
    """What `rtf serve` was told."""

    data: Path
    algorithm: str = "rtfs"
    taxonomy: Path | None = None
    max_body: int = MAX_BODY
    stream_queue: int = STREAM_QUEUE
    outbox_max_events: int = MAX_EVENTS
    outbox_max_age: float = MAX_AGE_S
    snapshot_every: int = SNAPSHOT_EVERY
    import_index: Path | None = None
    #: The engine's text analysis (`rtf.query.analysis`: a TextAnalysis or FieldAnalysis), or None.
    text_analysis: Any = None
