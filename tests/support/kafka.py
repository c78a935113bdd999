"""Kafka test helpers: a producer that is flushed and closed when its block ends.

A producer left to the garbage collector can outlive the broker: a failed DAG run's retained
traceback keeps the test's frame, and so its producer, alive, and librdkafka then logs
"Connection refused" once the session's broker has stopped."""
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Producer


@contextmanager
def producer(bootstrap: str, **conf: Any) -> Iterator[Producer]:
    """A confluent-kafka producer for the block; every record is delivered when it ends."""
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    try:
        yield p
        left = p.flush(30)
        assert left == 0, f"{left} records were not delivered in 30 s"
    finally:
        p.close()


def send(bootstrap: str, topic: str, values: Any, partition: int | None = None,
         timestamp: int | None = None) -> None:
    """Spark's ``testUtils.sendMessages``: the values as strings, to one partition (or as the
    producer partitions them), each stamped ``timestamp`` when one is given."""
    with producer(bootstrap) as p:
        for v in values:
            kw: dict[str, Any] = {"timestamp": timestamp} if timestamp is not None else {}
            if partition is not None:
                kw["partition"] = partition
            p.produce(topic, value=str(v).encode(), **kw)
