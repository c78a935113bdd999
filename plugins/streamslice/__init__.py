"""streamslice: bounded, exactly-once slices of Kafka topics and Kinesis streams.

The core package (config, planning, readers, checkpoint model) imports neither Airflow
nor PySpark; the glue for those lives in ``streamslice.airflow`` and ``streamslice.spark``.
"""

__version__ = "0.1.0"
