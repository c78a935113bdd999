"""Mirror committed progress into a Kafka consumer group, so existing lag monitors (Burrow,
kafka-consumer-groups, Cruise Control…) see the pipeline move. Never read back: the checkpoint
in Airflow is the source of truth (as Flink's commit-on-checkpoint is only for reporting)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import SourceError

if TYPE_CHECKING:
    from ..sources import Properties
    from ..splits import Positions


def commit_to_group(properties: Properties, group: str, positions: Positions) -> None:
    """Commit ``{"topic:partition": next offset}`` for ``group``, synchronously."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    offsets = []
    for key, offset in positions.items():
        topic, _, part = key.rpartition(":")
        offsets.append(TopicPartition(topic, int(part), int(offset)))
    if not offsets:
        return
    from .msk_iam import confluent_conf
    consumer = Consumer({**confluent_conf(properties), "group.id": group,
                         "enable.auto.commit": False,
                         "socket.connection.setup.timeout.ms": 10_000})
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    except KafkaException as exc:
        raise SourceError(f"committing offsets to consumer group {group!r} failed: {exc}") \
            from None
    finally:
        consumer.close()
