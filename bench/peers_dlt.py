"""bench/peers.py's dlt run, in dlt's own virtual environment: dlt's Kafka verified source
(vendored unchanged in bench/vendor/dlt_kafka) from the topic's start to its end, each JSON
value parsed by the message processor, into the filesystem destination as Parquet.
  <dlt venv>/bin/python bench/peers_dlt.py '{"bootstrap": ..., "topic": ..., "out": ...}'
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "vendor"))


def main() -> None:
    job = json.loads(sys.argv[1])
    out = Path(job["out"])
    out.mkdir(parents=True, exist_ok=True)
    os.environ["DLT_DATA_DIR"] = str(out / "_dlt")  # pipelines' working state: not the output
    os.environ["DLT_TELEMETRY"] = "false"
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    import dlt
    from confluent_kafka import Consumer
    from dlt_kafka import kafka_consumer

    def processor(msg: Any) -> dict[str, Any]:
        row: dict[str, Any] = json.loads(msg.value())
        # where it came from, as dlt's own processor keeps it (the table is named by topic)
        row["_kafka"] = {"topic": msg.topic(), "partition": msg.partition(),
                         "offset": msg.offset()}
        return row

    consumer = Consumer({"bootstrap.servers": job["bootstrap"], "group.id": "peers-dlt",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "receive.message.max.bytes": 2_147_483_647})
    pipeline = dlt.pipeline(pipeline_name="peers", destination=dlt.destinations.filesystem(
        bucket_url=(out / "data").as_uri()), dataset_name="peers",
        pipelines_dir=str(out / "_dlt" / "pipelines"))
    info = pipeline.run(kafka_consumer(job["topic"], credentials=consumer,
                                       msg_processor=processor),
                        loader_file_format="parquet")
    print(json.dumps({"loads": len(info.loads_ids)}))


if __name__ == "__main__":
    main()
