"""The planning client: partition metadata and offset look-ups through kafka-python."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError, PlanError, SourceError
from .properties import kafka_python_kwargs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..sources import Properties

log = logging.getLogger(__name__)
# kafka-python logs every failed connection attempt with a traceback; our one clear error
# says the same once.
logging.getLogger("kafka").setLevel(logging.CRITICAL)
T = TypeVar("T")


def topic_hint(topic: str, existing: list[str], shown: int = 10) -> str:
    """Close matches first, then at most ``shown`` of the existing topics."""
    import difflib
    if not existing:
        return " (it has no topics)"
    close = difflib.get_close_matches(topic, existing, n=3, cutoff=0.6)
    if close:
        return f" (did you mean {', '.join(close)}?)"
    more = f" and {len(existing) - shown} more" if len(existing) > shown else ""
    return f" (it has {', '.join(existing[:shown])}{more})"


class TopicPartition(tuple[str, int]):
    """``(topic, partition)``, printed as ``topic:partition``."""

    __slots__ = ()

    def __new__(cls, topic: str, partition: int | str) -> TopicPartition:
        return super().__new__(cls, (topic, int(partition)))

    @property
    def topic(self) -> str:
        return self[0]

    @property
    def partition(self) -> int:
        return self[1]

    @property
    def key(self) -> str:
        return f"{self[0]}:{self[1]}"

    @classmethod
    def parse(cls, key: Any) -> TopicPartition:
        topic, sep, part = str(key).rpartition(":")
        if not sep or not topic or not part.isdigit():
            raise ValueError(f"{key!r} is not topic:partition (e.g. orders:0)")
        return cls(topic, int(part))

    def __repr__(self) -> str:
        return self.key


def connect(properties: Properties, timeout_ms: int = 10_000, *, what: str = "",
            **settings: Any) -> Any:
    """A kafka-python ``KafkaConsumer`` without a group (``settings``: keyword arguments the
    client properties do not set), or one line saying why there is none: a ConfigError when
    the brokers do not offer the SASL mechanism (kafka-python only times out: ``handshake``
    asks the broker which it offers), a SourceError when no broker answers. ``what`` starts
    the message."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError, KafkaTimeoutError

    from .handshake import refusal
    servers = properties.get("bootstrap.servers")
    try:
        kwargs = kafka_python_kwargs(properties)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for key, value in settings.items():
        kwargs.setdefault(key, value)
    try:
        return KafkaConsumer(enable_auto_commit=False, group_id=None,
                             bootstrap_timeout_ms=timeout_ms, **kwargs)
    except KafkaTimeoutError:
        why = refusal(properties, kwargs)
        if why:
            raise ConfigError(f"{what}{why}") from None
        raise SourceError(f"{what}cannot reach Kafka at {servers}: no broker answered "
                          f"within {timeout_ms / 1000:.0f}s") from None
    except KafkaError as exc:
        raise SourceError(f"{what}cannot connect to Kafka at {servers}: {exc}") from None


class KafkaAdmin:
    """Offsets and metadata for planning. ``offsets_for_times`` gives the end where no record is
    at or after the time, never None."""

    def __init__(self, properties: Properties, timeout_ms: int = 10_000) -> None:
        from kafka.errors import KafkaError
        self.servers = properties.get("bootstrap.servers")
        self._consumer = connect(properties, timeout_ms,
                                 request_timeout_ms=max(timeout_ms, 11_000))
        self._KafkaError = KafkaError

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except self._KafkaError as exc:
            raise SourceError(f"Kafka at {self.servers}: {what} failed: {exc}") from None

    def topics(self) -> list[str]:
        return sorted(t for t in self._call("listing topics", self._consumer.topics)
                      if not t.startswith("__"))

    def partitions(self, topic: str) -> list[TopicPartition]:
        parts = self._call(f"describing topic {topic!r}",
                           self._consumer.partitions_for_topic, topic)
        if not parts:
            raise PlanError(f"topic {topic!r} does not exist on {self.servers}"
                            f"{topic_hint(topic, self.topics())}")
        return [TopicPartition(topic, p) for p in sorted(parts)]

    def _tps(self, tps: Iterable[TopicPartition]) -> dict[Any, TopicPartition]:
        from kafka import TopicPartition as KTP
        return {KTP(tp.topic, tp.partition): tp for tp in tps}

    def beginning_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        mapping = self._tps(tps)
        got = self._call("reading log-start offsets", self._consumer.beginning_offsets,
                         list(mapping))
        return {mapping[k]: v for k, v in got.items()}

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        mapping = self._tps(tps)
        got = self._call("reading high watermarks", self._consumer.end_offsets, list(mapping))
        return {mapping[k]: v for k, v in got.items()}

    def offsets_for_times(self, times: dict[TopicPartition, int],
                          ends: dict[TopicPartition, Any] | None = None
                          ) -> dict[TopicPartition, int]:
        """``{tp: ms}`` → ``{tp: first offset with timestamp >= ms}`` (the end if none)."""
        found = self.first_offsets_at(times)
        missing = [tp for tp, off in found.items() if off is None]
        if missing and ends is None:
            ends = self.end_offsets(missing)
        return {tp: off if off is not None else ends[tp]  # type: ignore[index]
                for tp, off in found.items()}

    def first_offsets_at(self, times: dict[TopicPartition, int]
                         ) -> dict[TopicPartition, int | None]:
        """``{tp: ms}`` → ``{tp: first offset with timestamp >= ms}``, None where the
        partition has no such record (yet)."""
        if not times:
            return {}
        mapping = self._tps(times)
        query = {k: times[tp] for k, tp in mapping.items()}
        got = self._call("looking up offsets by timestamp", self._consumer.offsets_for_times,
                         query)
        return {tp: found.offset if (found := got.get(k)) is not None else None
                for k, tp in mapping.items()}
