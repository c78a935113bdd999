"""Register or deregister a per-run EFO consumer in its own process (the chaos tests kill it
midway): python -m tests.chaos.efo register|deregister ENDPOINT STREAM_ARN NAME"""
import sys


def main(action, endpoint, stream_arn, name):
    from streamslice.kinesis.client import make_client
    from streamslice.kinesis.consumers import deregister, register
    client = make_client({"region": "us-east-1", "endpoint_url": endpoint,
                          "access_key_id": "test", "secret_access_key": "test"})
    (register if action == "register" else deregister)(client, stream_arn, name)


if __name__ == "__main__":
    main(*sys.argv[1:])
