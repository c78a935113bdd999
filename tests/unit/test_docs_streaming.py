"""docs/streaming.md's option tables against the code: every option the Kafka and files
streams take is in its table and every row is an option they take, and the defaults the
tables give are what the option parsers do when the option is left out (Spark's, as the
page says)."""
import re

from streamslice.files.source import FileSource
from streamslice.files.stream import limits_from_options
from streamslice.kafka.source import KafkaSource
from streamslice.kafka.spark_options import OPTIONS
from streamslice.kafka.spark_stream import DEFAULT_MAX_TRIGGER_DELAY, stream_from_options
from tests.support.checks import present
from tests.unit.test_docs import section


def table(text):
    """{option: default} of the markdown table in ``text`` (a row may name several)."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1].strip("`")
    return rows


def test_the_kafka_table_lists_every_stream_option_and_nothing_else():
    rows = table(section("streaming.md", "Options and their defaults"))
    documented = {n.lower() for n in rows if not n.startswith("kafka.")}
    assert documented == {o.lower() for o in OPTIONS}
    assert "kafka.*" in rows and "kafka.isolation.level" in rows


def test_the_kafka_tables_defaults_are_the_streams():
    rows = table(section("streaming.md", "Options and their defaults"))
    source, _, limits = stream_from_options(
        {"kafka.bootstrap.servers": "a:1", "subscribe": "t"})
    read = present(source.spark)
    assert rows["startingOffsets"] == read.start.kind == "latest"
    assert rows["startingOffsetsByTimestampStrategy"] == read.no_match
    assert rows["failOnDataLoss"] == str(read.fail_on_data_loss).lower()
    assert rows["includeHeaders"] == str(read.include_headers).lower()
    assert rows["maxTriggerDelay"] == DEFAULT_MAX_TRIGGER_DELAY
    assert rows["maxOffsetsPerTrigger"] == rows["minOffsetsPerTrigger"] == "none"
    assert (limits.max_offsets, limits.min_offsets) == (None, None)
    assert rows["client"] == source.client
    read_options = KafkaSource.readers().spark_read_options({"subscribe": "t"})
    assert rows["kafka.isolation.level"] == read_options["isolation.level"]


def test_the_files_table_lists_every_option_with_its_default():
    rows = table(section("streaming.md", "Files"))
    assert set(rows) == set(FileSource.options)
    source, _ = FileSource.from_options({"path": "/data"})
    assert rows["pattern"] == source.pattern
    assert rows["startingPosition"] == source.start
    limits = limits_from_options({})
    assert rows["maxFilesPerTrigger"] == rows["maxBytesPerTrigger"] == "none"
    assert (limits.max_files, limits.max_bytes) == (None, None)
