"""Binary record codecs: Avro and Protobuf schemas as Arrow types (Spark's mappings), and
record batches decoded into Arrow arrays, each bad record a dead letter with its reason."""


class AvroSchemaError(ValueError):
    """A schema that is not valid Avro or cannot become Arrow columns."""
