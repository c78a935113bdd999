"""Dataset names as the OpenLineage spec's naming conventions give them."""
import pytest

from streamslice.monitoring.lineage import kafka_dataset, kinesis_dataset, location_dataset


def test_kafka_is_named_by_the_first_bootstrap_server_and_the_topic():
    assert kafka_dataset("b-1.msk:9098,b-2.msk:9098", "orders") == ("kafka://b-1.msk:9098",
                                                                    "orders")
    assert kafka_dataset("SASL_SSL://broker:9093", "t") == ("kafka://broker:9093", "t")


def test_kinesis_follows_the_arn_as_glue_tables_do():
    assert kinesis_dataset("arn:aws:kinesis:eu-west-1:123456789012:stream/trips") == \
        ("arn:aws:kinesis:eu-west-1:123456789012", "stream/trips")
    assert kinesis_dataset("arn:aws-cn:kinesis:cn-north-1:123456789012:stream/t") == \
        ("arn:aws-cn:kinesis:cn-north-1:123456789012", "stream/t")


@pytest.mark.parametrize("uri, name", [
    ("/lake/out/pipeline=p", ("file", "/lake/out/pipeline=p")),
    ("file:///lake/out/", ("file", "/lake/out")),
    ("s3://bucket/out/pipeline=p", ("s3://bucket", "out/pipeline=p")),
    ("s3a://bucket/out", ("s3://bucket", "out")),
    ("gs://bucket/x/y", ("gs://bucket", "x/y")),
    ("hdfs://nn:8020/lake/t", ("hdfs://nn:8020", "/lake/t")),
])
def test_locations_are_named_by_their_scheme(uri, name):
    assert location_dataset(uri) == name
