"""``spark.read.format("streamslice-kafka")``: a PySpark 4 Python Data Source.

Give it a ReadPlan (``plan`` option, as the Airflow DAG does) or Spark-Kafka-style options
(``subscribe``, ``startingOffsets``, ``endingOffsets``…) and it plans on the driver. Client
properties come as ``kafka.*`` options and never enter the plan.
"""
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema


class SplitPartition(InputPartition):
    def __init__(self, split):
        super().__init__(split)


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls):
        return "streamslice-kafka"

    def _plan(self):
        if not hasattr(self, "_cached_plan"):
            from streamslice.spark.options import plan_from_options
            self._cached_plan = plan_from_options(dict(self.options), "kafka")
        return self._cached_plan

    def schema(self):
        from streamslice.decode import Decoder
        from streamslice.kafka.reader import record_schema
        plan = self._plan()
        return from_arrow_schema(record_schema(Decoder.from_dict(plan.decode),
                                               plan.mode == "interval"))

    def reader(self, schema):
        return KafkaReader(self._plan(), dict(self.options))


class KafkaReader(DataSourceReader):
    def __init__(self, plan, options):
        from streamslice.spark.options import client_properties
        options = {k.lower(): v for k, v in options.items()}
        self.plan_json = plan.to_json()
        self.splits = [s.__dict__ for s in plan.splits]
        self.properties = client_properties(options, "kafka.")
        self.client = options.get("client") or plan.source_info.get("client") \
            or "confluent-kafka"
        self.staging = options.get("staging")
        self.fault = options.get("injectfault")

    def partitions(self):
        return [SplitPartition(s) for s in self.splits] or [SplitPartition(None)]

    def read(self, partition):
        from streamslice.decode import Decoder
        from streamslice.kafka.reader import KafkaSplitReader
        from streamslice.plan import KafkaSplit, ReadPlan
        from streamslice.staging import Staging
        if partition.value is None:
            return iter(())
        plan = ReadPlan.from_json(self.plan_json)
        reader = KafkaSplitReader(
            KafkaSplit(**partition.value), properties=self.properties, client=self.client,
            decoder=Decoder.from_dict(plan.decode), interval=plan.interval,
            staging=Staging(self.staging) if self.staging else None, fault=self.fault)
        return reader.batches()


def register(spark):
    spark.dataSource.register(KafkaDataSource)
    try:
        from streamslice.spark.kinesis_source import KinesisDataSource
    except ImportError:
        return
    spark.dataSource.register(KinesisDataSource)
