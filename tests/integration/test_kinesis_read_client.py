"""The readers' client (UTC timestamp parsing) against the real local Kinesis server: the
polling and EFO readers see every record with the arrival time botocore's default parser
gives it."""
import pytest

from streamslice.kinesis.consumers import register
from streamslice.kinesis.polling import PollingSettings
from streamslice.kinesis.reader import KinesisSplitReader
from streamslice.kinesis.split import KinesisSplit
from tests.support.kinesis import all_records, create_stream, put
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration


def test_readers_see_the_arrival_times_botocore_reports(kinesis):
    client = kinesis.client()  # botocore's default parser
    stream = unique("arrivals")
    arn = create_stream(client, stream, 2)
    put(client, stream, [b"r%d" % i for i in range(300)])
    truth = all_records(client, stream)
    bound = max(truth.values()) + 1
    props = {"region": "us-east-1", "endpoint_url": kinesis.endpoint, "access_key_id": "test",
             "secret_access_key": "test"}
    consumer = register(client, arn, "arrivals")
    for consumer_arn in (None, consumer):
        seen = {}
        for i, shard in enumerate(sorted({s for s, _ in truth})):
            split = KinesisSplit(id=i, stream=stream, shard_id=shard,
                                 start={"type": "TRIM_HORIZON"}, stop_before=bound)
            reader = KinesisSplitReader(split, properties=props, consumer_arn=consumer_arn,
                                        settings=PollingSettings(interval_ms=0))
            for batch in reader.batches():
                ms = batch.column("approximateArrivalTimestamp").cast("int64").to_pylist()
                for seq, us in zip(batch.column("sequenceNumber").to_pylist(), ms):
                    seen[(shard, seq)] = us // 1000
        assert seen == truth, f"reader {'efo' if consumer_arn else 'polling'}"
