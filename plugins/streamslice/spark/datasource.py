"""``spark.read.format("streamslice-kafka")`` and ``"streamslice-kinesis"``: PySpark 4 Python
Data Sources whose input partitions are a ReadPlan's splits.

Give them a ReadPlan (``plan`` option, as the Airflow DAG does) or source options (Spark-Kafka
style ``subscribe``/``startingOffsets``/…; ``streamName``/``startingPosition``/… for Kinesis)
and they plan on the driver. Client properties come as ``kafka.*`` / ``aws.*`` options and never
enter the plan. ``staging`` makes readers leave split summaries and dead letters there.
"""
import json

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema


class SplitPartition(InputPartition):
    def __init__(self, split):
        super().__init__(split)


class _PlannedSource(DataSource):
    kind = None

    @classmethod
    def name(cls):
        return f"streamslice-{cls.kind}"

    def _plan(self):
        if not hasattr(self, "_cached_plan"):
            from streamslice.spark.options import plan_from_options
            self._cached_plan = plan_from_options(dict(self.options), self.kind)
        return self._cached_plan

    def schema(self):
        from streamslice.decode import Decoder
        plan = self._plan()
        return from_arrow_schema(_reader_module(self.kind).record_schema(
            Decoder.from_dict(plan.decode), **_schema_args(plan)))

    def reader(self, schema):
        return PlanReader(self.kind, self._plan(), dict(self.options))


class KafkaDataSource(_PlannedSource):
    kind = "kafka"


class KinesisDataSource(_PlannedSource):
    kind = "kinesis"


class PlanReader(DataSourceReader):
    def __init__(self, kind, plan, options):
        from streamslice.spark.options import client_properties
        options = {k.lower(): v for k, v in options.items()}
        self.kind, self.plan_json = kind, plan.to_json()
        self.splits = [dict(s.__dict__) for s in plan.splits]
        self.properties = client_properties(options, "kafka." if kind == "kafka" else "aws.")
        self.options = {k: options.get(k) for k in ("staging", "injectfault", "client",
                                                    "consumerarns")}

    def partitions(self):
        return [SplitPartition(s) for s in self.splits] or [SplitPartition(None)]

    def read(self, partition):
        from streamslice.decode import Decoder
        from streamslice.plan import ReadPlan
        from streamslice.staging import Staging
        if partition.value is None:
            return iter(())
        plan = ReadPlan.from_json(self.plan_json)
        opts = self.options
        common = {"properties": self.properties, "decoder": Decoder.from_dict(plan.decode),
                  "staging": Staging(opts["staging"]) if opts["staging"] else None,
                  "fault": opts["injectfault"]}
        if self.kind == "kafka":
            from streamslice.kafka.reader import KafkaSplitReader
            from streamslice.plan import KafkaSplit
            return KafkaSplitReader(
                KafkaSplit(**partition.value), interval=plan.interval,
                client=opts["client"] or plan.source_info.get("client") or "confluent-kafka",
                **common).batches()
        from streamslice.kinesis.planner import settings_from_dict
        from streamslice.kinesis.reader import KinesisSplitReader
        from streamslice.kinesis.split import KinesisSplit
        split = KinesisSplit(**partition.value)
        arns = json.loads(opts["consumerarns"] or "{}")
        info = plan.source_info  # region and endpoint are not secrets: the plan carries them
        common["properties"] = {**{k: info[k] for k in ("region", "endpoint_url")
                                   if info.get(k)}, **self.properties}
        return KinesisSplitReader(split, settings=settings_from_dict(
            plan.source_info.get("polling")), consumer_arn=arns.get(split.stream),
            **common).batches()


def _reader_module(kind):
    if kind == "kafka":
        from streamslice.kafka import reader
    else:
        from streamslice.kinesis import reader
    return reader


def _schema_args(plan):
    return {"interval_mode": plan.mode == "interval"} if plan.source == "kafka" else {}


def register(spark):
    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(KinesisDataSource)
