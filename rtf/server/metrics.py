"""The broker's Prometheus metrics (``GET /metrics``), in a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Filter latency buckets, seconds: a publication takes from well under a
#: millisecond to seconds, depending on how many queries it matches.
LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5)


class Metrics:
    """Counters and gauges of one broker."""

    def __init__(self):
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.queries = Gauge("rtf_queries", "Registered queries", registry=r)
        self.subscribers = Gauge("rtf_subscribers", "Subscribers with at least one query "
                                 "(counted when /metrics is read)", registry=r)
        self.publications = Counter("rtf_publications", "Publications matched", registry=r)
        self.matches = Counter("rtf_matches", "Matches found (publication, query)", registry=r)
        self.filter_seconds = Histogram("rtf_filter_seconds", "Time to match one publication",
                                        buckets=LATENCY_BUCKETS, registry=r)
        self.bad_requests = Counter("rtf_rejected_requests", "Requests refused, by HTTP status",
                                    ["status"], registry=r)
        self.events = Counter("rtf_outbox_events", "Matches stored in the outbox for subscribers",
                              registry=r)
        self.streams = Gauge("rtf_streams", "Open subscriber streams", registry=r)
        self.streams_cut = Counter("rtf_streams_cut", "Streams cut for falling behind", registry=r)
        self.delivered = Counter("rtf_events_sent", "Events written to subscriber streams",
                                 registry=r)
