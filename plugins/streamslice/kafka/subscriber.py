"""Which partitions a pipeline reads: a topic list, a topic pattern, or explicit partitions."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import PlanError, SourceError
from .admin import TopicPartition

if TYPE_CHECKING:
    from .admin import KafkaAdmin


class Subscriber(Protocol):
    def partitions(self, admin: KafkaAdmin) -> list[TopicPartition]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class TopicList:
    topics: tuple[str, ...]

    def partitions(self, admin: KafkaAdmin) -> list[TopicPartition]:
        return [tp for topic in self.topics for tp in admin.partitions(topic)]

    def describe(self) -> str:
        return ", ".join(self.topics)


@dataclass(frozen=True)
class TopicPattern:
    """Flink's ``setTopicPattern`` (the YAML's ``topic_pattern``) matches whole topic names;
    Spark's ``subscribePattern`` finds the pattern anywhere in a name (``search``)."""

    pattern: str
    search: bool = False

    def partitions(self, admin: KafkaAdmin) -> list[TopicPartition]:
        regex = re.compile(self.pattern)
        match = regex.search if self.search else regex.fullmatch
        topics = [t for t in admin.topics() if match(t)]
        if not topics:
            raise SourceError(f"no topic on {admin.servers} matches pattern {self.pattern!r}")
        return [tp for topic in topics for tp in admin.partitions(topic)]

    def describe(self) -> str:
        return f"topics matching /{self.pattern}/"


@dataclass(frozen=True)
class PartitionSet:
    assigned: tuple[TopicPartition, ...]

    def partitions(self, admin: KafkaAdmin) -> list[TopicPartition]:
        known: dict[str, set[TopicPartition]] = {}
        for tp in self.assigned:
            if tp.topic not in known:
                known[tp.topic] = set(admin.partitions(tp.topic))
            if tp not in known[tp.topic]:
                raise PlanError(f"partition {tp.key} does not exist on {admin.servers} "
                                  f"(topic {tp.topic!r} has {len(known[tp.topic])} partitions)")
        return list(self.assigned)

    def describe(self) -> str:
        return ", ".join(tp.key for tp in self.assigned)


def parse_partition(item: Any) -> TopicPartition:
    """``"orders:0"`` or ``{topic: orders, partition: 0}`` → TopicPartition."""
    if isinstance(item, dict):
        if set(item) != {"topic", "partition"} or not isinstance(item["partition"], int):
            raise ValueError(f"{item!r} must be {{topic: NAME, partition: N}}")
        return TopicPartition(item["topic"], item["partition"])
    return TopicPartition.parse(item)
