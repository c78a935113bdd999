import json
import time
from typing import TYPE_CHECKING

from devtools.services import MotoServer


def sns_to_sqs():
    moto = MotoServer().start()
    sns, sqs = moto.client("sns"), moto.client("sqs")
    topic = sns.create_topic(Name="streamslice-alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="alerts")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn,
                  Attributes={"RawMessageDelivery": "true"})

    def received(wait=5.0, until=None):
        """Drain the queue; with ``until`` (an alert kind) keep waiting up to ``wait``."""
        out, deadline = [], time.monotonic() + wait
        while time.monotonic() < deadline:
            got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10,
                                      WaitTimeSeconds=1).get("Messages", [])
            for m in got:
                out.append(json.loads(m["Body"]))
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
            if until is None and out and not got:
                break
            if until is not None and any(a["kind"] == until for a in out):
                break
        return out

    return moto, topic, received


if TYPE_CHECKING:
    from airflow.sdk import BaseNotifier
else:
    try:
        from airflow.sdk import BaseNotifier
    except ImportError:  # unit tests without Airflow never load the notifier
        BaseNotifier = object


class FileNotifier(BaseNotifier):
    """A user's own notifier, as a pipeline names it: ``{class: …, args: {path, label}}``.
    Appends each alert, with the label it was configured with, to a JSON-lines file."""

    template_fields = ()

    def __init__(self, path, label):
        super().__init__()
        self.path, self.label = path, label

    def notify(self, context):
        alert = context["streamslice_alert"]
        with open(self.path, "a") as f:
            f.write(json.dumps({"label": self.label, "kind": alert.kind,
                                "pipeline": alert.pipeline}) + "\n")
