"""AWS access for every process that calls AWS: the Airflow tasks (plan, EFO, commit) and the
Spark processes that read (executors, a Spark Connect server, EMR Serverless).

What travels between them is an ``AwsAuth``: region, endpoints, a profile name, the role to
assume — never a key. Each process resolves it on its own: base credentials from botocore's
default chain (environment, shared credentials file / profile, web identity, container or
instance role — on EMR the job's execution role), or static keys handed to it privately
(``config.secrets``), then ``role_arn`` assumed in-process with credentials that refresh before they
expire, so a read longer than a role session keeps working. No Airflow, no PySpark here.
"""
from .auth import AwsAuth, parse_auth
from .session import aws_client, boto3_session, frozen_credentials, stream_ref

__all__ = ["AwsAuth", "aws_client", "boto3_session", "frozen_credentials", "parse_auth",
           "stream_ref"]
