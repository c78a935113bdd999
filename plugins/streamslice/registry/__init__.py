"""Schema registries as real parts: the Confluent Schema Registry (REST, through the
confluent-kafka client) and the AWS Glue Schema Registry (boto3), the wire formats their
serializers write (``wire``), and per-process caches of the writer schemas they serve.

A registry is named in the pipeline's ``format.registry`` block (no secrets); its credentials
come from an Airflow connection, resolved where the read runs, as client properties under
``schema.registry.`` (``properties``)."""
