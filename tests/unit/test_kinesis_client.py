"""The readers' Kinesis client: arrival times parsed straight to UTC (the same instants as
botocore's default parser), one client per process and properties. No server is contacted:
making a client is local; reading through it is covered by
tests/integration/test_kinesis_read_client.py."""
from datetime import timezone

from botocore.utils import parse_timestamp

from streamslice.kinesis.client import make_client, utc_timestamp
from streamslice.sources import Properties

PROPS: Properties = {"region": "us-east-1", "endpoint_url": "http://127.0.0.1:9",
                     "access_key_id": "a", "secret_access_key": "b"}


def test_epoch_seconds_become_the_same_instant_in_utc():
    for value in (1714521600.123, 1714521600, 0, 1.5, 4102444800.999):
        ours, botocore = utc_timestamp(value), parse_timestamp(value)
        assert ours == botocore and ours.tzinfo is timezone.utc
        assert round(ours.timestamp() * 1000) == round(botocore.timestamp() * 1000)


def test_anything_but_a_number_goes_to_botocore():
    text = "2024-05-01T00:00:00.123Z"
    assert utc_timestamp(text) == parse_timestamp(text)


def test_one_reader_client_per_process_and_properties():
    a, b = make_client(PROPS, utc_timestamps=True), make_client(PROPS, utc_timestamps=True)
    other = make_client({**PROPS, "endpoint_url": "http://127.0.0.1:10"}, utc_timestamps=True)
    assert a is b and other is not a
    assert make_client(PROPS) is not make_client(PROPS)  # other clients are made afresh
