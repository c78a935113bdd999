"""A worker whose clock runs ahead of the Kinesis server's, against the real local Kinesis
server (kinesis-local): the run takes its interval for closed while, by the stream's clock
(which stamps arrivals), it is not. The polling and the EFO reader, caught up at the tip, read
on until the server's clock has passed the interval's end, so a record that arrives before
the end by the server's clock is in the run's read; before, the read ended at the tip and the
next interval, starting at AT_TIMESTAMP(end), never read the record."""
import threading
import time

import pytest

from streamslice.kinesis import polling
from streamslice.kinesis.consumers import register
from streamslice.kinesis.polling import PollingSettings
from streamslice.kinesis.reader import KinesisSplitReader
from streamslice.kinesis.split import KinesisSplit
from tests.support.kinesis import all_records, create_stream, put
from tests.support.pipelines import unique
from tests.support.wait import wait_until_clock

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("reader", ["polling", "efo"])
def test_a_shard_closes_the_interval_by_the_server_s_clock(kinesis, monkeypatch, reader):
    client = kinesis.client()
    stream = unique("clock")
    arn = create_stream(client, stream, 1)
    consumer = register(client, arn, unique("clock")) if reader == "efo" else None
    put(client, stream, [b"before"])
    end = (int(time.time()) + 8) * 1000  # the interval's end, seconds ahead
    real = polling.wall_ms
    monkeypatch.setattr(polling, "wall_ms", lambda: real() + 30_000)  # a worker 30 s ahead
    shard = client.list_shards(StreamName=stream)["Shards"][0]["ShardId"]
    split = KinesisSplit(id=0, stream=stream, shard_id=shard, start={"type": "TRIM_HORIZON"},
                         stop_before=end)
    props = {"region": "us-east-1", "endpoint_url": kinesis.endpoint, "access_key_id": "test",
             "secret_access_key": "test"}

    def late_writer():  # a producer writing just before the end, by the server's clock
        wait_until_clock((end - 1500) / 1000)
        put(client, stream, [b"just before the end"])
    writer = threading.Thread(target=late_writer)
    writer.start()
    split_reader = KinesisSplitReader(split, properties=props, consumer_arn=consumer,
                                      settings=PollingSettings(interval_ms=100))
    seen = [seq for batch in split_reader.batches()
            for seq in batch.column("sequenceNumber").to_pylist()]
    writer.join()
    truth = all_records(client, stream)
    before_end = sorted((seq for (_, seq), ms in truth.items() if ms < end), key=int)
    assert len(before_end) == 2, truth  # both arrived before the end, by the server's clock
    assert seen == before_end
