"""Pipeline file validation: each invalid field gets its own precise message with file:line."""
import pytest

from streamslice.commit.publishers.files import FilesSettings
from streamslice.config import load_pipelines, parse_pipeline
from streamslice.errors import ConfigError
from streamslice.kafka.positions import (
    Committed,
    Earliest,
    IntervalEnd,
    Latest,
    Specified,
    Timestamp,
)
from streamslice.kafka.source import KafkaSource
from streamslice.runners.connect import ConnectRunner
from streamslice.runners.emr_serverless import EmrServerlessRunner
from streamslice.runners.local import LocalRunner
from streamslice.runners.spark_submit import SparkSubmitRunner
from tests.support.checks import present

GOOD = """\
mode: incremental
kafka:
  bootstrap_servers: 127.0.0.1:9092
  topics: [orders]
output:
  path: /lake
"""


def parse(text):
    return parse_pipeline(text, file="p.yaml", default_name="p")


def error(text):
    with pytest.raises(ConfigError) as info:
        parse(text)
    return str(info.value)


def test_good_file_defaults():
    cfg = parse(GOOD)
    assert cfg.name == "p" and cfg.mode == "incremental" and cfg.max_active_runs == 1
    assert cfg.source.start == Committed(Earliest()) and cfg.source.stop == Latest()
    assert cfg.source.client == "confluent-kafka" and cfg.source.on_data_loss == "fail"
    assert cfg.output.dataset("p") == "/lake/pipeline=p"


@pytest.mark.parametrize("change, message", [
    (("topics: [orders]", "topics: [orders]\n  colour: blue"),
     "p.yaml:5: kafka.colour: unknown key 'colour'"),
    (("mode: incremental", "mode: streaming"),
     "p.yaml:1: mode: 'streaming' is not one of: interval, incremental"),
    (("127.0.0.1:9092", "localhost"),
     "p.yaml:3: kafka.bootstrap_servers: 'localhost' is not host:port"),
    (("127.0.0.1:9092", "a:1,b:99999"),
     "p.yaml:3: kafka.bootstrap_servers: 'b:99999' is not host:port"),
    (("  topics: [orders]\n", ""),
     "kafka: give exactly one of topics, topic_pattern or partitions"),
    (("topics: [orders]", "topics: [orders]\n  topic_pattern: 'o.*'"),
     "give exactly one of topics, topic_pattern or partitions (got topics, topic_pattern)"),
    (("topics: [orders]", "topic_pattern: '(unclosed'"),
     "p.yaml:4: kafka.topic_pattern: '(unclosed' is not a valid regex"),
    (("topics: [orders]", "topics: [orders]\n  start: earleist"),
     "p.yaml:5: kafka.start: 'earleist' is not one of: earliest, latest, committed"),
    (("topics: [orders]", "topics: [orders]\n  start: {timestamp: '2024-13-01'}"),
     "p.yaml:5: kafka.start: '2024-13-01' is not an ISO-8601 timestamp"),
    (("topics: [orders]", "topics: [orders]\n  start: {offsets: {orders: 3}}"),
     "p.yaml:5: kafka.start: 'orders' is not topic:partition"),
    (("topics: [orders]", "topics: [orders]\n  stop: data_interval_end"),
     "kafka.stop: data_interval_end needs mode interval"),
    (("topics: [orders]", "topics: [orders]\n  max_records_per_split: 0"),
     "p.yaml:5: kafka.max_records_per_split: must be at least 1, got 0"),
    (("topics: [orders]", "topics: [orders]\n  client: librdkafka"),
     "kafka.client: 'librdkafka' is not one of: confluent-kafka, kafka-python"),
    (("  bootstrap_servers: 127.0.0.1:9092\n", ""),
     "kafka: needs bootstrap_servers or conn_id"),
    (("output:\n  path: /lake\n", "output:\n  path: /lake\n  format: csv\n"),
     "p.yaml:7: output.format: 'csv' is not one of: parquet, json, orc"),
    (("mode: incremental", "mode: incremental\nmax_active_runs: 3"),
     "max_active_runs: must be 1 in mode incremental"),
    (("mode: incremental", "mode: incremental\nallowed_lateness: 5m"),
     "allowed_lateness: only applies to mode interval"),
    (("mode: incremental", "mode: incremental\nformat:\n  value: json"),
     "format.schema: is required with value: json"),
    (("mode: incremental", "mode: incremental\nformat:\n  value: json\n  schema: {a: int64}"),
     "format.schema: field 'a': type 'int64' is not one of"),
    (("mode: incremental", "mode: incremental\nretry_delay: soon"),
     "retry_delay: 'soon' is not a duration"),
    (("mode: incremental", "mode: incremental\nmode: interval"),
     "p.yaml:2: invalid YAML: duplicate key 'mode'"),
    (("topics: [orders]", "topics: [orders"), "invalid YAML"),
])
def test_each_bad_field_has_its_message(change, message):
    old, new = change
    assert old in GOOD
    assert message in error(GOOD.replace(old, new, 1))


INTERVAL = """\
mode: interval
schedule: "@hourly"
start_date: 2024-05-01T00:00:00Z
allowed_lateness: 10m
kafka:
  bootstrap_servers: 127.0.0.1:9092
  topics: [orders]
output:
  path: /lake
"""


def test_interval_mode_reads_its_data_interval():
    cfg = parse(INTERVAL)
    assert cfg.source.start == Timestamp("data_interval_start")
    assert cfg.source.stop == IntervalEnd()
    assert cfg.allowed_lateness == 600_000 and cfg.start_date == 1_714_521_600_000


@pytest.mark.parametrize("change, message", [
    (("  topics: [orders]", "  topics: [orders]\n  start: earliest"),
     "kafka.start: is set by the run's data interval in mode interval"),
    (("allowed_lateness: 10m", "allowed_lateness: 2h"),
     "allowed_lateness: 7200s is longer than the schedule's shortest interval (3600s)"),
    (('schedule: "@hourly"\n', ""), "schedule: is required in mode interval"),
    (('"@hourly"', '"@fortnightly"'), "schedule: '@fortnightly' is not one of the presets"),
    (('"@hourly"', '"61 * * * *"'), "schedule: '61 * * * *' is not a valid cron expression"),
    (("start_date: 2024-05-01T00:00:00Z", "start_date: yesterday"),
     "p.yaml:3: start_date: 'yesterday' is not an ISO-8601 timestamp"),
])
def test_interval_mode_errors(change, message):
    old, new = change
    assert message in error(INTERVAL.replace(old, new, 1))


def test_start_forms():
    def start(spec):
        return parse(GOOD.replace("topics: [orders]", f"topics: [orders]\n  start: {spec}")) \
            .source.start
    assert start("latest") == Committed(Latest())
    assert start("{committed: latest}") == Committed(Latest())
    assert start("{offsets: {'orders:0': 42}}") == Committed(Specified({"orders:0": 42}))
    assert start("{timestamp: 1714521600000}") == Committed(Timestamp(1714521600000))
    assert start("{timestamp: '2024-05-01T00:00:00Z'}") == Committed(Timestamp(1714521600000))


def test_environment_interpolation(monkeypatch):
    monkeypatch.setenv("BROKER", "10.0.0.1:9093")
    cfg = parse(GOOD.replace("127.0.0.1:9092", "${BROKER}"))
    assert cfg.source.bootstrap_servers == "10.0.0.1:9093"
    cfg = parse(GOOD.replace("127.0.0.1:9092", "${NOPE_UNSET:-127.0.0.1:1234}"))
    assert cfg.source.bootstrap_servers == "127.0.0.1:1234"
    assert "environment variable NOPE_UNSET is not set" in error(
        GOOD.replace("127.0.0.1:9092", "${NOPE_UNSET}"))


def test_folder_reports_each_bad_file_and_keeps_good_ones(tmp_path):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(GOOD.replace("incremental", "sometimes"))
    configs, errors = load_pipelines(tmp_path)
    assert [c.name for c in configs] == ["good"]
    assert len(errors) == 1 and str(errors[0]).startswith(f"{tmp_path / 'bad.yaml'}:1: mode:")


@pytest.mark.parametrize("extra, message", [
    ("end_date: 2023-01-01T00:00:00Z\n", "end_date: must be after start_date"),
])
def test_an_end_date_before_the_start_date_is_refused(extra, message):
    with pytest.raises(ConfigError, match=message):
        parse(INTERVAL + extra)


@pytest.mark.parametrize("kafka_extra, message", [
    ("  start: {offsets: {'orders:0': 50}}\n  stop: {offsets: {'orders:0': 10}}\n",
     "kafka.stop: orders:0: offset 10 is below the start offset 50"),
    ("  max_records_per_split: 1000000000000000000000000000000\n",
     "kafka.max_records_per_split: must be at most 9223372036854775807"),
])
def test_offsets_that_cross_and_absurd_numbers_are_refused(kafka_extra, message):
    text = ("mode: incremental\nkafka:\n  bootstrap_servers: a:1\n  topics: [orders]\n"
            f"{kafka_extra}output: {{path: /x}}\n")
    with pytest.raises(ConfigError, match=message):
        parse(text)


def test_sub_second_schedules_are_refused():
    """Partitions are named to the second: 600ms intervals would overwrite each other."""
    text = INTERVAL.replace('"@hourly"', "600ms")
    assert "600ms" in text
    with pytest.raises(ConfigError, match="'600ms' is not a whole number of seconds"):
        parse(text)
    parse(INTERVAL.replace('"@hourly"', "3600s"))


def test_every_default_the_readme_reference_lists(monkeypatch):
    """The *Reference* tables' default column, field by field, for a file that sets nothing
    it need not (Kinesis' and files' own defaults: tests/unit/test_kinesis_config.py,
    test_files_source.py)."""
    from streamslice.kafka.positions import Committed, Earliest, Latest
    for name in ("STREAMSLICE_SPARK_RUNNER", "STREAMSLICE_SPARK_MASTER", "SPARK_REMOTE",
                 "STREAMSLICE_HOME", "STREAMSLICE_LOCAL_SERVER",
                 "STREAMSLICE_LOCAL_SERVER_IDLE"):
        monkeypatch.delenv(name, raising=False)
    cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n",
                         file="/project/dags/pipelines/orders.yaml", default_name="orders")
    assert (cfg.name, cfg.schedule, cfg.start_date, cfg.end_date, cfg.catchup) == \
        ("orders", None, None, None, False)
    assert (cfg.allowed_lateness, cfg.max_active_runs, cfg.retries, cfg.retry_delay) == \
        (0, 1, 2, 30_000)
    alerts = present(cfg.alerts)
    assert (cfg.tags, cfg.description, alerts.notifiers, alerts.lag_records) == \
        ((), "", (), None)
    assert (cfg.decode.value.name, cfg.decode.key.name, cfg.decode.on_error,
            cfg.decode.flatten) == ("raw", "raw", "dead_letter", True)
    assert cfg.decode.allow_all_dead_letters is False
    assert "allow_all_dead_letters" not in cfg.decode.to_dict()  # plans stay as they were
    out = cfg.output
    assert (out.path, out.format, out.compression, out.settings) == \
        ("/project/output", "parquet", "snappy", FilesSettings())
    assert out.aws.to_dict() == {}  # the default chain
    assert out.dataset("orders") == "/project/output/pipeline=orders"
    assert cfg.spark == LocalRunner(master="local[*]", conf={})
    src = cfg.source
    assert isinstance(src, KafkaSource)
    assert (src.start, src.stop) == (Committed(Earliest()), Latest())
    assert (src.properties, src.client, src.on_data_loss, src.max_records_per_split,
            src.commit_group) == ({}, "confluent-kafka", "fail", 1_000_000, "streamslice-orders")
    interval = parse(INTERVAL)
    assert interval.max_active_runs == 4 and interval.catchup is False
    # An Iceberg output without a table or catalog: streamslice.<pipeline> in a SQLite catalog
    # beside the output.
    iceberg = parse(GOOD.replace("path: /lake", "path: /lake\n  format: iceberg"))
    target = iceberg.output.target("p")
    assert target.table == "streamslice.p" and target.catalog == {
        "type": "sql", "uri": "sqlite:////lake/_streamslice/iceberg.db",
        "warehouse": "file:///lake"}
    delta = parse(GOOD.replace("path: /lake", "path: /lake\n  format: delta"))
    assert delta.output.target("p").table == "/lake/pipeline=p"
    # $STREAMSLICE_SPARK_RUNNER, $STREAMSLICE_SPARK_MASTER, and $SPARK_REMOTE meaning connect
    monkeypatch.setenv("STREAMSLICE_SPARK_MASTER", "spark://m:7077")
    monkeypatch.setenv("STREAMSLICE_SPARK_RUNNER", "spark-submit")
    assert parse(GOOD).spark == SparkSubmitRunner(master="spark://m:7077")
    monkeypatch.delenv("STREAMSLICE_SPARK_RUNNER")
    monkeypatch.setenv("SPARK_REMOTE", "sc://s:15002")
    assert parse(GOOD).spark == ConnectRunner(remote="sc://s:15002")


def test_emr_serverless_defaults_the_readme_lists():
    cfg = parse(GOOD.replace("output:", "spark:\n  runner: emr-serverless\n  emr_serverless: "
                             "{application_id: a, execution_role_arn: r, code_uri: 's3://c/'}\n"
                             "output:"))
    assert cfg.spark == EmrServerlessRunner(
        application_id="a", execution_role_arn="r", code_uri="s3://c/",
        aws_conn_id="aws_default", venv_archive=None, timeout=3_600_000,
        poll_interval=30_000)
    with pytest.raises(ConfigError, match="spark.emr_serverless: is only used with runner: "
                                          "emr-serverless"):
        parse(GOOD.replace("output:", "spark:\n  emr_serverless: {application_id: a}\noutput:"))


def test_allow_all_dead_letters_reaches_the_plan():
    cfg = parse_pipeline("mode: incremental\nkafka: {bootstrap_servers: 'a:1', topics: [t]}\n"
                         "format: {value: string, allow_all_dead_letters: true}\n",
                         default_name="orders")
    assert cfg.decode.to_dict()["allow_all_dead_letters"] is True
    assert cfg.decode.prepared().allow_all_dead_letters is True


def test_a_key_of_another_choice_is_refused_in_its_words_unless_it_sets_nothing():
    """One rule for the keys of another runner or output format (Fields.others_keys)."""
    from streamslice.config.fields import Fields
    told = {"remote": "is only used with runner: connect"}.get
    f = Fields({"remote": {}, "master": "local[2]"}, file="p.yaml", path="spark")
    f.others_keys(told)
    f.str("master")
    f.done()  # an empty block of another runner's: nothing set, nothing ignored
    for value, nothing in (("sc://host", (None, {})), (None, ({},))):
        f = Fields({"remote": value}, file="p.yaml", path="spark")
        with pytest.raises(ConfigError, match="spark.remote: is only used with runner: "):
            f.others_keys(told, nothing=nothing)
    f = Fields({"remote": "sc://host", "odd": 1}, file="p.yaml", path="spark")
    f.others_keys(told, skip=("remote",))  # its own: read by the caller next
    with pytest.raises(ConfigError, match="unknown key 'remote'"):
        f.done()


def test_one_loader_for_registered_paths_and_lifecycle_functions():
    from streamslice.registry import load
    from streamslice.sources import call
    assert load("streamslice.registry:load") is load
    assert load("streamslice.registry.load") is load
    assert call("streamslice.sources.call") is call
