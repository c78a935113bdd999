"""``streamslice-kinesis`` options: strict names and values, each error one clear line."""
import json

import pytest

from streamslice.errors import ConfigError
from streamslice.kinesis.positions import ArrivedBefore, AtTimestamp, Latest, Tip, TrimHorizon
from streamslice.kinesis.source import KinesisSource
from streamslice.spark.plan_options import check_names

ARN = "arn:aws:kinesis:us-east-1:000000000000:stream/taxi/consumer/c:1"


def parse(**kw):
    opts = {"streamName": "taxi"}
    opts.update(kw)
    return KinesisSource.from_options({k.lower(): v for k, v in opts.items() if v is not None})


def test_positions_and_client_properties():
    src, props = parse(startingPosition="latest", region="eu-west-1",
                       **{"aws.access_key_id": "k", "aws.secret_access_key": "s"})
    assert (src.start, src.stop) == (Latest(), Tip())
    assert props == {"region": "eu-west-1", "access_key_id": "k", "secret_access_key": "s"}
    src, _ = parse(startingPosition="AT_TIMESTAMP", startingTimestamp="1459799926.480",
                   endingTimestamp="1459799999")
    assert (src.start, src.stop) == (AtTimestamp(1459799926480), ArrivedBefore(1459799999000))
    assert parse()[0].start == TrimHorizon()
    src, _ = parse(consumerArns=json.dumps({"taxi": ARN}))
    assert (src.reader, src.efo_consumer_arns) == ("efo", {"taxi": ARN})


@pytest.mark.parametrize("given, message", [
    ({"streamName": None}, "option streamName is required"),
    ({"streamName": " , "}, "names no stream"),
    ({"startingPosition": "AT_SEQUENCE_NUMBER"}, "is not TRIM_HORIZON, LATEST or AT_TIMESTAMP"),
    ({"startingPosition": "AT_TIMESTAMP"}, "needs option startingTimestamp"),
    ({"startingTimestamp": "1459799926"}, "only used with startingPosition AT_TIMESTAMP"),
    ({"startingPosition": "AT_TIMESTAMP", "startingTimestamp": "soon"},
     "option timestamp: 'soon' does not match the date format"),
    ({"startingPosition": "AT_TIMESTAMP", "startingTimestamp": "20", "endingTimestamp": "10"},
     "endingTimestamp must be after startingTimestamp"),
    ({"consumerArns": json.dumps({"other": ARN})}, "'other' is not in streamName"),
    ({"consumerArns": json.dumps({"taxi": "c:1"})}, "consumerArns must map each stream"),
])
def test_bad_kinesis_options(given, message):
    with pytest.raises(ConfigError, match=message):
        parse(**given)


def test_unknown_kinesis_option_names_the_closest():
    with pytest.raises(ConfigError, match=r"unknown option 'startposition' for "
                                          r"streamslice-kinesis \(did you mean startingPosition"):
        check_names({"startposition": "x"}, "kinesis", KinesisSource.options, "aws.")
