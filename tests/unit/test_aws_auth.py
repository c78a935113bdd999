"""The AWS auth spec that travels in plans (no secrets), and stream ARNs."""
import pytest

from streamslice.aws import AwsAuth, stream_ref
from streamslice.aws.auth import is_secret
from streamslice.config import parse_pipeline
from streamslice.errors import ConfigError

BASE = """
mode: incremental
kinesis:
  stream: {stream}
{extra}output: {{path: /x}}
"""


def kinesis(extra="", stream="s"):
    return parse_pipeline(BASE.format(stream=stream, extra=extra)).source


def test_role_settings_parse_into_the_client_properties():
    src = kinesis("  region: eu-west-1\n  role_arn: arn:aws:iam::123456789012:role/reader\n"
                  "  external_id: ext-1\n  session_name: etl\n  session_duration: 2h\n")
    props = src.client_properties({"region": "us-east-1", "access_key_id": "AK"})
    auth = AwsAuth.from_dict(props)
    assert auth == AwsAuth(region="eu-west-1", role_arn="arn:aws:iam::123456789012:role/reader",
                           external_id="ext-1", session_name="etl", session_duration_s=7200)
    assert "access_key_id" not in auth.to_dict()  # keys are never part of the spec


@pytest.mark.parametrize("extra, message", [
    ("  role_arn: reader\n", "'reader' is not an IAM role ARN"),
    ("  external_id: x\n", "kinesis.external_id: needs role_arn"),
    ("  role_arn: arn:aws:iam::123456789012:role/r\n  session_duration: 5m\n",
     "kinesis.session_duration: must be between 15m and 12h"),
])
def test_bad_role_settings_name_their_field(extra, message):
    with pytest.raises(ConfigError, match=message):
        kinesis(extra)


def test_stream_arns():
    arn = "arn:aws:kinesis:eu-west-1:210987654321:stream/orders"
    assert stream_ref(arn) == ("orders", arn)
    assert stream_ref("orders") == ("orders", None)
    with pytest.raises(ConfigError, match="is not a Kinesis stream ARN"):
        stream_ref("arn:aws:s3:::bucket")


def test_secret_property_names():
    for name in ("sasl.password", "secret_access_key", "session_token", "sasl.jaas.config",
                 "access_key_id", "ssl.key.pem", "ssl.key.password", "credential"):
        assert is_secret(name), name
    for name in ("bootstrap.servers", "sasl.username", "region", "role_arn", "external_id",
                 "security.protocol", "sasl.mechanism"):
        assert not is_secret(name), name


def test_flink_assume_role_provider_keys():
    src = kinesis("  region: eu-west-1\n  flink_properties:\n"
                  "    aws.credentials.provider: ASSUME_ROLE\n"
                  "    aws.credentials.provider.role.arn: arn:aws:iam::123456789012:role/r\n"
                  "    aws.credentials.provider.role.sessionName: flinky\n"
                  "    aws.credentials.provider.role.externalId: e-9\n")
    assert src.aws == AwsAuth(role_arn="arn:aws:iam::123456789012:role/r",
                              session_name="flinky", external_id="e-9")
    with pytest.raises(ConfigError, match="ASSUME_ROLE needs aws.credentials.provider.role.arn"):
        kinesis("  flink_properties: {aws.credentials.provider: ASSUME_ROLE}\n")


@pytest.mark.parametrize("duration, seconds", [("15m", 900), ("12h", 43_200), ("13h", None),
                                               ("899s", None)])
def test_a_role_session_lasts_15_minutes_to_12_hours_as_sts_allows(duration, seconds):
    extra = f"  role_arn: arn:aws:iam::123456789012:role/r\n  session_duration: {duration}\n"
    if seconds is None:
        with pytest.raises(ConfigError, match="must be between 15m and 12h"):
            kinesis(extra)
    else:
        assert kinesis(extra).aws.session_duration_s == seconds
