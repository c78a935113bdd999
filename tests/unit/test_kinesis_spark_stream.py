"""The Kinesis ``readStream``'s own logic: its options (the AWS Kinesis connector's names and
defaults, each error one line), the cut a ``maxFetchRecordsPerShard`` limit moves back to,
and the offsets of a stream whose shards were split. The offsets tests fake the Kinesis client
(ListShards, DescribeStreamSummary only): they cover our planning over shards, not Kinesis;
tests/integration/test_kinesis_stream.py reads the real server."""
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from streamslice.errors import ConfigError
from streamslice.kinesis.positions import NO_BOUND
from streamslice.kinesis.spark_stream import FINISHED, cut_at
from streamslice.kinesis.stream_options import STREAM_OPTIONS, stream_from_options

BASE = {"kinesis.streamname": "taxi"}


def parse(**options):
    return stream_from_options({**BASE, **{k.lower(): v for k, v in options.items()}})


def test_the_connector_s_defaults():
    fields, props, settings = parse()
    assert fields.start.type == "LATEST" and fields.reader == "polling"
    assert settings.max_fetch == 100_000 and settings.fail_on_data_loss is False
    assert fields.polling.max_records == 10_000 and fields.polling.interval_ms == 200
    assert props == {}


def test_names_with_and_without_the_kinesis_prefix():
    fields, props, _ = stream_from_options({"streamname": "a,b", "kinesis.region": "eu-west-1",
                                            "awsaccesskeyid": "k", "kinesis.awssecretkey": "s"})
    assert fields.streams == ("a", "b") and fields.region == "eu-west-1"
    assert props == {"access_key_id": "k", "secret_access_key": "s"}
    with pytest.raises(ConfigError, match="option streamname is given twice"):
        stream_from_options({"streamname": "a", "kinesis.streamname": "a"})


@pytest.mark.parametrize(("given", "expected"), [
    ("TRIM_HORIZON", {"type": "TRIM_HORIZON"}), ("earliest", {"type": "TRIM_HORIZON"}),
    ("AT_TIMESTAMP 2023-08-30T19:00:05Z", {"type": "AT_TIMESTAMP", "timestamp": 1693422005000}),
    ("AT_TIMESTAMP 2023-08-30T19:00:05-08:00",
     {"type": "AT_TIMESTAMP", "timestamp": 1693450805000})])
def test_starting_positions(given, expected):
    assert parse(startingPosition=given)[0].start.to_dict() == expected


def test_at_timestamp_with_the_batch_read_s_starting_timestamp():
    start = parse(startingPosition="AT_TIMESTAMP", startingTimestamp="1693422005.5")[0].start
    assert start.to_dict() == {"type": "AT_TIMESTAMP", "timestamp": 1693422005500}


@pytest.mark.parametrize(("options", "error"), [
    ({"kinesis.streamname": " "}, "option kinesis.streamName is required"),
    ({"startingPosition": "AT_SEQUENCE_NUMBER"}, "is not LATEST, TRIM_HORIZON, EARLIEST"),
    ({"startingPosition": "AT_TIMESTAMP"}, "AT_TIMESTAMP needs a time"),
    ({"startingPosition": "AT_TIMESTAMP yesterday"}, "AT_TIMESTAMP 'yesterday'"),
    ({"startingPosition": "LATEST 2023-08-30T19:00:05Z"}, "takes no time"),
    ({"consumerType": "efo"}, "'efo' is not GetRecords or SubscribeToShard"),
    ({"consumerType": "SubscribeToShard"}, "kinesis.consumerName is required"),
    ({"consumerName": "app"}, "are for kinesis.consumerType SubscribeToShard"),
    ({"consumerType": "SubscribeToShard", "efoRegistration": "none"},
     "efoRegistration none takes kinesis.consumerArns"),
    ({"consumerType": "SubscribeToShard", "efoRegistration": "none",
      "consumerArns": '{"taxi": 5}'}, "kinesis.consumerArns must map each stream"),
    ({"consumerType": "SubscribeToShard", "consumerName": "a", "efoRegistration": "lazy"},
     "'lazy' is not per_run or keep or none"),
    ({"maxFetchRecordsPerShard": "0"}, "'0' is not a positive integer"),
    ({"maxFetchRecordsPerShard": "many"}, "'many' is not a positive integer"),
    ({"failOnDataLoss": "yes"}, "option kinesis.failOnDataLoss: 'yes' is not a boolean")])
def test_bad_options_are_one_line(options, error):
    with pytest.raises(ConfigError, match=re.escape(error)) as failed:
        parse(**options)
    assert "\n" not in str(failed.value)


def test_efo_registrations():
    fields, _, settings = parse(consumerType="SubscribeToShard", consumerName="app")
    assert fields.reader == "efo" and settings.registration == "per_run"
    assert settings.consumer_name == "app"
    arns = '{"taxi": "arn:aws:kinesis:us-east-1:1:stream/taxi/consumer/app:1"}'
    fields, _, settings = parse(consumerType="SubscribeToShard", efoRegistration="none",
                                consumerArns=arns)
    assert settings.consumer_name is None and fields.efo_consumer_arns["taxi"]


@pytest.mark.parametrize(("times", "limit", "cut"), [
    ([1, 2, 3, 4], 3, 4),  # three records before the fourth's millisecond
    ([1, 2, 2, 2, 3], 3, 2),  # the cut cannot split a millisecond: one record
    ([5, 5, 5, 5], 3, None),  # no place to cut: the batch goes on to T
    ([1, 9, 4, 10], 3, 10),  # arrival times out of order: all before the cut arrived earlier
    ([1, 9, 4, 5], 3, 9)])
def test_a_limit_cuts_between_two_arrival_milliseconds(times, limit, cut):
    assert cut_at(times, limit) == cut


class FakeKinesis:
    """ListShards and DescribeStreamSummary only (see the module's docstring)."""

    def __init__(self, shards):
        self.shards = shards

    def describe_stream_summary(self, **kwargs):
        return {"StreamDescriptionSummary": {"StreamARN": "arn:aws:kinesis:x:1:stream/taxi"}}

    def list_shards(self, **kwargs):
        return {"Shards": self.shards}


def shard(sid, parent=None, closed=False):
    rng = {"StartingSequenceNumber": "1", **({"EndingSequenceNumber": "9"} if closed else {})}
    return {"ShardId": sid, "SequenceNumberRange": rng,
            **({"ParentShardId": parent} if parent else {})}


def stream(shards, **options):
    from streamslice.kinesis.source import KinesisSource
    out = KinesisSource.stream({**BASE, "kinesis.startingposition": "TRIM_HORIZON",
                                **{k.lower(): v for k, v in options.items()}})
    out._client = FakeKinesis(shards)
    return out


def test_a_split_parent_is_read_to_its_end_before_its_children():
    s = stream([shard("p", closed=True), shard("c1", "p"), shard("c2", "p")])
    start = s.initial_offset()
    assert start["shards"] == {"taxi:p": {"type": "TRIM_HORIZON"}}  # children wait
    first = s.latest_offset(start, all_available=True)
    assert first["shards"] == {"taxi:p": FINISHED}
    [parent] = s.batch_splits(start, first)
    assert parent.stop_before == NO_BOUND and parent.closed
    second = s.latest_offset(first, all_available=True)
    assert set(second["shards"]) == {"taxi:p", "taxi:c1", "taxi:c2"}
    children = s.batch_splits(first, second)
    assert [(c.shard_id, c.start) for c in children] == [("c1", {"type": "TRIM_HORIZON"}),
                                                        ("c2", {"type": "TRIM_HORIZON"})]
    assert children[0].stop_before == second["shards"]["taxi:c1"]["timestamp"]


def test_available_now_fixes_the_end_when_the_query_starts():
    s = stream([shard("a")])
    s.prepare_available_now()
    start = s.initial_offset()
    end = s.latest_offset(start, all_available=True)
    assert s.latest_offset(end, all_available=True) == end  # nothing more: the query stops
    assert s.batch_splits(end, end) == []


def test_a_shard_gone_before_its_end_is_data_loss_when_asked():
    start = {"initial": {"type": "TRIM_HORIZON"},
             "shards": {"taxi:old": {"type": "AT_TIMESTAMP", "timestamp": 5}}}
    assert "taxi:old" not in stream([shard("a")]).latest_offset(start, True)["shards"]
    with pytest.raises(Exception, match="shards taxi:old expired before they were read"):
        stream([shard("a")], failOnDataLoss="true").latest_offset(start, True)


def test_the_docs_list_every_option_with_its_default():
    page = (Path(__file__).parents[2] / "docs" / "streaming.md").read_text()
    section = page[page.index("## Kinesis"):]
    rows = dict(re.findall(r"^\| `kinesis\.([\w.]+)` \| (.*?) \|", section, re.M))
    assert set(rows) == set(STREAM_OPTIONS)
    for name, default in STREAM_OPTIONS.items():
        shown = rows[name].strip("` ")
        assert shown == (default or "none"), (name, rows[name])


def test_utc_offsets_parse_as_the_connector_s():
    when = datetime(2023, 8, 30, 19, 0, 5, tzinfo=timezone.utc)
    start = parse(startingPosition="AT_TIMESTAMP 2023-08-30T19:00:05+00:00")[0].start
    assert start.timestamp == int(when.timestamp() * 1000)
