"""A DataFrame read (``spark.read.format("streamslice-kafka")``) accounts for every record, as
Spark's own file sources do with option ``mode``: PERMISSIVE (a row whose corrupt-record column
holds the raw record and its reason), DROPMALFORMED (dropped, and counted in the task's log),
FAILFAST (the query fails with Spark's text). Real broker, real Spark: rows plus corrupt or
dropped records equal the records produced, for each mode."""
import json

import pytest

from devtools.services import create_topic
from tests.support.checks import present
from tests.support.kafka import producer
from tests.support.pipelines import unique

pytestmark = pytest.mark.integration

SCHEMA = "id BIGINT NOT NULL, fare DOUBLE"
# (partition, key, value) of the records that do not decode, by their index
BAD = {3: b"{not json", 7: b'{"id": "seven", "fare": 1.0}', 11: b"[1, 2]",
       14: b'{"fare": 2.5}', 20: b"\xff\xfe{}"}
N = 36


@pytest.fixture(scope="module")
def topic(broker):
    """36 records over two partitions, 5 of which do not fit SCHEMA; → (topic, {(partition,
    offset): value of a bad record})."""
    name = unique("modes")
    create_topic(broker.bootstrap, name, 2)
    bad, offsets = {}, {0: 0, 1: 0}
    with producer(broker.bootstrap) as p:
        for i in range(N):
            part = i % 2
            value = BAD.get(i, json.dumps({"id": i, "fare": i / 4}).encode())
            p.produce(name, key=f"k{i}".encode(), value=value, partition=part)
            if i in BAD:
                bad[(part, offsets[part])] = value
            offsets[part] += 1
    return name, bad


def reader(spark, broker, name, **options):
    r = (spark.read.format("streamslice-kafka")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", name)
         .option("valueFormat", "json").option("schema", SCHEMA))
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


@pytest.fixture
def worker_logs(spark):
    """The Python workers' log records of the queries run in the test, through Spark's own
    ``spark.tvf.python_worker_logs()``."""
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    seen = {r.msg for r in spark.tvf.python_worker_logs().select("msg").collect()}

    def new(name):
        return [r.msg for r in spark.tvf.python_worker_logs().select("msg").collect()
                if r.msg not in seen and name in r.msg]
    yield new
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "false")


def malformed_counts(lines):
    """(count, records) of each task's warning: '…: 3 of 18 records are malformed …'."""
    import re
    said = r": (\d+) of (\d+) records are malformed"
    return [tuple(map(int, present(re.search(said, line)).groups())) for line in lines]


def test_permissive_is_the_default_and_keeps_every_record_as_a_row(spark, broker, topic,
                                                                     worker_logs):
    name, bad = topic
    df = reader(spark, broker, name)
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields][-1] == (
        "_corrupt_record", "struct<key:binary,value:binary,error:string>", True)
    assert df.schema["id"].nullable  # Spark's PERMISSIVE forces the schema nullable
    rows = df.collect()
    corrupt = [r for r in rows if r._corrupt_record is not None]
    assert len(rows) == N and len(corrupt) == len(BAD)
    assert {(r.partition, r.offset): r._corrupt_record.value for r in corrupt} == bad
    assert all(r.id is None and r.fare is None and r.key == r._corrupt_record.key
               for r in corrupt)
    reasons = {r._corrupt_record.value: r._corrupt_record.error for r in corrupt}
    assert reasons[BAD[7]] == "field 'id': expected long, got \"seven\""
    assert reasons[BAD[14]] == "field 'id': is NOT NULL, got nothing"
    assert reasons[BAD[3]].startswith("invalid JSON")
    assert sorted(r.id for r in rows if r._corrupt_record is None) == \
        [i for i in range(N) if i not in BAD]
    lines = worker_logs(name)
    assert sum(c for c, _ in malformed_counts(lines)) == len(BAD)
    assert all("mode PERMISSIVE" in line for line in lines)
    # the older option says the same
    assert reader(spark, broker, name, onDecodeError="dead_letter") \
        .where("_corrupt_record IS NOT NULL").count() == len(BAD)


def test_column_name_of_corrupt_record(spark, broker, topic):
    name, bad = topic
    df = reader(spark, broker, name, columnNameOfCorruptRecord="bad", mode="permissive")
    assert df.columns[-1] == "bad" and df.where("bad IS NOT NULL").count() == len(bad)
    with pytest.raises(Exception, match="the column 'fare' would be there twice"):
        reader(spark, broker, name, columnNameOfCorruptRecord="fare")


def test_dropmalformed_drops_and_counts_them(spark, broker, topic, worker_logs):
    name, bad = topic
    df = reader(spark, broker, name, mode="DROPMALFORMED")
    assert "_corrupt_record" not in df.columns and not df.schema["id"].nullable
    rows = df.collect()
    lines = worker_logs(name)
    dropped = sum(c for c, _ in malformed_counts(lines))
    assert len(rows) + dropped == N and dropped == len(BAD)
    assert sum(n for _, n in malformed_counts(lines)) == N  # the tasks that met them
    assert any("mode DROPMALFORMED: dropped); first: offset" in line for line in lines)


def test_failfast_fails_the_query_with_sparks_text(spark, broker, topic):
    name, _ = topic
    for options in ({"mode": "FAILFAST"}, {"onDecodeError": "fail"}):
        with pytest.raises(Exception) as failed:
            reader(spark, broker, name, **options).collect()
        text = str(failed.value)
        assert "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are " \
               f"detected in record parsing: {name}:" in text
        assert "Parse Mode: FAILFAST. To process malformed records as null result, try " \
               "setting the option 'mode' as 'PERMISSIVE'." in text
        assert "Traceback" not in text, text  # the task's error as its line, as Spark's


def test_a_read_that_cannot_fail_keeps_sparks_columns(spark, broker, topic):
    """raw key and value cannot be malformed: no corrupt-record column, Spark's columns."""
    name, _ = topic
    df = (spark.read.format("streamslice-kafka")
          .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", name).load())
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType"]
    assert df.count() == N


def test_mode_options_are_checked(spark, broker, topic):
    name, _ = topic
    with pytest.raises(Exception, match="option mode: 'LENIENT' is not one of: PERMISSIVE, "
                                        "DROPMALFORMED, FAILFAST"):
        reader(spark, broker, name, mode="lenient")
    with pytest.raises(Exception, match="options mode and onDecodeError say the same thing"):
        reader(spark, broker, name, mode="FAILFAST", onDecodeError="fail")


def test_permissive_on_kinesis_and_files_holds_their_raw_record(spark, kinesis, tmp_path):
    """The corrupt-record column's shape per source, as the Spark page gives it: Kinesis
    ``struct<data, error>``, files ``struct<value, error>``; every record a row."""
    from tests.support.kinesis import create_stream, put
    client = kinesis.client()
    stream = unique("modes")
    create_stream(client, stream, 1)
    put(client, stream, [b'{"n": 1}', b"{oops", b'{"n": 3}'])
    df = (spark.read.format("streamslice-kinesis").option("streamName", stream)
          .option("region", "us-east-1").option("endpointUrl", kinesis.endpoint)
          .option("aws.access_key_id", "test").option("aws.secret_access_key", "test")
          .option("valueFormat", "json").option("schema", "n BIGINT").load())
    assert df.schema["_corrupt_record"].dataType.simpleString() == \
        "struct<data:binary,error:string>"
    rows = df.collect()
    assert sorted(r.n for r in rows if r.n is not None) == [1, 3] and len(rows) == 3
    bad, = [r._corrupt_record for r in rows if r._corrupt_record is not None]
    assert bytes(bad.data) == b"{oops" and bad.error.startswith("invalid JSON")

    (tmp_path / "a.jsonl").write_bytes(b'{"n": 1}\n[2]\n{"n": 3}\n')
    df = spark.read.format("streamslice-files").option("pattern", "*.jsonl") \
        .option("valueFormat", "json").option("schema", "n BIGINT").load(str(tmp_path))
    assert df.schema["_corrupt_record"].dataType.simpleString() == \
        "struct<value:binary,error:string>"
    corrupt = [(r.line, bytes(r._corrupt_record.value), r._corrupt_record.error)
               for r in df.collect() if r._corrupt_record is not None]
    assert corrupt == [(1, b"[2]", "expected a JSON object, got list")] and df.count() == 3
