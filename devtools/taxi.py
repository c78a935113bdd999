"""Taxi-trip events, as in the AWS/Flink blog the product grew from: pickup and dropoff
locations, passengers, fare and event time. Deterministic for a seed; a share of records
arrives out of order (event time earlier than the records produced before them)."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from confluent_kafka import KafkaError, Message

ZONES = [("JFK Airport", 40.6413, -73.7781), ("Times Sq", 40.7580, -73.9855),
         ("Union Sq", 40.7359, -73.9911), ("Harlem", 40.8116, -73.9465),
         ("Williamsburg", 40.7081, -73.9571), ("LaGuardia", 40.7769, -73.8740),
         ("Financial District", 40.7075, -74.0113), ("Astoria", 40.7644, -73.9235)]


@dataclass
class Trip:
    key: bytes
    value: bytes
    timestamp: int  # event time, epoch ms


def trips(start_ms: int, hours: int, per_hour: int, seed: int = 7, late_share: float = 0.05,
          max_delay_ms: int = 300_000) -> list[Trip]:
    """Trips in event-time order across ``hours`` hours, then a share moved later in the
    produce order (by up to ``max_delay_ms`` of stream time) to arrive out of order."""
    rng = random.Random(seed)
    n = hours * per_hour
    span = hours * 3_600_000
    times = sorted(start_ms + rng.randrange(span) for _ in range(n))
    out = []
    for i, ts in enumerate(times):
        (pz, plat, plon), (dz, dlat, dlon) = rng.sample(ZONES, 2)
        minutes = rng.randint(4, 60)
        fare = round(2.5 + minutes * rng.uniform(0.6, 1.4), 2)
        value = {"trip_id": f"t{seed}-{i:07d}", "vendor_id": rng.randint(1, 2),
                 "pickup_zone": pz, "pickup_lat": plat, "pickup_lon": plon,
                 "dropoff_zone": dz, "dropoff_lat": dlat, "dropoff_lon": dlon,
                 "passenger_count": rng.randint(1, 6), "fare_amount": fare,
                 "total_amount": round(fare * rng.uniform(1.1, 1.3), 2), "event_time": ts}
        out.append(Trip(f"taxi-{rng.randint(1, 500):04d}".encode(),
                        json.dumps(value).encode(), ts))
    # Produce order: event time plus a delay for the late share, so those records reach the
    # broker after records with later event times.
    arrival = [t.timestamp + (rng.randrange(max_delay_ms) if rng.random() < late_share else 0)
               for t in out]
    order = sorted(range(n), key=lambda i: (arrival[i], i))
    return [out[i] for i in order]


TRIP_SCHEMA = {"trip_id": "string", "vendor_id": "int", "pickup_zone": "string",
               "pickup_lat": "double", "pickup_lon": "double", "dropoff_zone": "string",
               "dropoff_lat": "double", "dropoff_lon": "double", "passenger_count": "int",
               "fare_amount": "double", "total_amount": "double", "event_time": "timestamp"}


def produce(bootstrap: str, topic: str, records: Iterable[Trip],
            partitions: int | None = None) -> list[tuple[int, int, int]]:
    """Produce keyed records with explicit timestamps; returns the send results as
    ``[(partition, offset, timestamp)]`` from the broker's delivery reports."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    results: list[tuple[int, int, int]] = []
    errors: list[KafkaError] = []

    def done(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)
            return
        partition, offset = msg.partition(), msg.offset()
        assert partition is not None and offset is not None  # a delivered record has both
        results.append((partition, offset, msg.timestamp()[1]))

    for i, r in enumerate(records):
        partition = i % partitions if partitions else -1  # -1: the producer's partitioner
        while True:
            try:
                p.produce(topic, key=r.key, value=r.value, timestamp=r.timestamp,
                          on_delivery=done, partition=partition)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    p.flush(120)
    if errors:
        raise RuntimeError(f"{len(errors)} records failed to send: {errors[0]}")
    return results
