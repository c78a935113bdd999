"""``spark.read.format("streamslice-kinesis")``: one input partition per shard split.

Options: ``plan`` (a ReadPlan, as the Airflow DAG passes it) or ``streamName``, ``region``,
``endpointUrl``, ``startingPosition`` (TRIM_HORIZON | LATEST | AT_TIMESTAMP with
``startingTimestamp`` in epoch seconds), ``endingTimestamp``; ``consumerArns`` (JSON
stream → ARN) reads through Enhanced Fan-Out. AWS credentials come as ``aws.*`` options
(region, endpoint_url, access_key_id, secret_access_key, session_token) or the default chain.
"""
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.pandas.types import from_arrow_schema

from .datasource import SplitPartition


class KinesisDataSource(DataSource):
    @classmethod
    def name(cls):
        return "streamslice-kinesis"

    def _plan(self):
        if not hasattr(self, "_cached_plan"):
            from streamslice.spark.options import plan_from_options
            self._cached_plan = plan_from_options(dict(self.options), "kinesis")
        return self._cached_plan

    def schema(self):
        from streamslice.decode import Decoder
        from streamslice.kinesis.reader import record_schema
        return from_arrow_schema(record_schema(Decoder.from_dict(self._plan().decode)))

    def reader(self, schema):
        return KinesisReader(self._plan(), dict(self.options))


class KinesisReader(DataSourceReader):
    def __init__(self, plan, options):
        import json

        from streamslice.spark.options import client_properties
        options = {k.lower(): v for k, v in options.items()}
        self.plan_json = plan.to_json()
        self.splits = [dict(s.__dict__) for s in plan.splits]
        self.properties = client_properties(options, "aws.")
        self.staging = options.get("staging")
        self.fault = options.get("injectfault")
        self.arns = json.loads(options.get("consumerarns") or "{}")

    def partitions(self):
        return [SplitPartition(s) for s in self.splits] or [SplitPartition(None)]

    def read(self, partition):
        from streamslice.decode import Decoder
        from streamslice.kinesis.planner import settings_from_dict
        from streamslice.kinesis.reader import KinesisSplitReader
        from streamslice.kinesis.split import KinesisSplit
        from streamslice.plan import ReadPlan
        from streamslice.staging import Staging
        if partition.value is None:
            return iter(())
        plan = ReadPlan.from_json(self.plan_json)
        split = KinesisSplit(**partition.value)
        reader = KinesisSplitReader(
            split, properties=self.properties, decoder=Decoder.from_dict(plan.decode),
            staging=Staging(self.staging) if self.staging else None,
            settings=settings_from_dict(plan.source_info.get("polling")),
            consumer_arn=self.arns.get(split.stream), fault=self.fault)
        return reader.batches()
