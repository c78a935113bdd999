"""Which SASL mechanisms a broker offers, asked the way every Kafka client starts: one
SaslHandshake request (API key 17, version 1) naming the client's mechanism.

kafka-python gives up on a broker whose handshake answer does not list its mechanism (with
UNSUPPORTED_SASL_MECHANISM, as Apache Kafka answers, or with no error and a list without it,
as the local broker answers OAUTHBEARER), drops the list and retries until its bootstrap
times out, so all the planner could say was that no broker answered. Asked here once its
bootstrap has failed, the broker's own answer names both sides. The request carries no
credential: it is the unauthenticated first step of every SASL connection.
"""
from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sources import Properties
    from .properties import ClientKwargs

SASL_HANDSHAKE, VERSION = 17, 1
UNSUPPORTED_SASL_MECHANISM = 33


@dataclass(frozen=True)
class Handshake:
    server: str
    error_code: int
    mechanisms: tuple[str, ...]


def request(mechanism: str, correlation_id: int = 1,
            client_id: str = "streamslice") -> bytes:
    """A SaslHandshake v1 request: size, header v1 (api key, version, correlation id,
    client id), the mechanism."""
    body = struct.pack(">hhi", SASL_HANDSHAKE, VERSION, correlation_id) + \
        _string(client_id) + _string(mechanism)
    return struct.pack(">i", len(body)) + body


def parse_response(frame: bytes) -> tuple[int, int, tuple[str, ...]]:
    """A SaslHandshake response (without its size) → (correlation id, error code, the
    mechanisms the broker lists)."""
    correlation_id, error_code, count = struct.unpack(">ihi", frame[:10])
    at, mechanisms = 10, []
    for _ in range(max(count, 0)):
        (n,) = struct.unpack(">h", frame[at:at + 2])
        mechanisms.append(frame[at + 2:at + 2 + n].decode("utf-8", "replace"))
        at += 2 + n
    return correlation_id, error_code, tuple(mechanisms)


def ask(server: str, mechanism: str, kwargs: ClientKwargs,
        timeout_s: float = 5.0) -> Handshake | None:
    """The broker's answer to a handshake for ``mechanism`` (``kwargs``: kafka-python's, for
    TLS), or None when it cannot be asked (unreachable, not Kafka, TLS refused)."""
    host, _, port = server.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as raw:
            sock: socket.socket = raw
            if kwargs.get("security_protocol") == "SASL_SSL":
                sock = _tls(kwargs).wrap_socket(raw, server_hostname=host.strip("[]"))
            sock.sendall(request(mechanism))
            size = struct.unpack(">i", _read(sock, 4))[0]
            if not 10 <= size <= 1 << 20:
                return None
            _, error_code, mechanisms = parse_response(_read(sock, size))
            return Handshake(server, error_code, mechanisms)
    except (OSError, ValueError, struct.error):
        return None


def refusal(properties: Properties, kwargs: ClientKwargs) -> str | None:
    """Why the brokers of a SASL connection would not take its mechanism, in one line, or
    None when no broker says so (unreachable, or it offers the mechanism)."""
    protocol = kwargs.get("security_protocol", "")
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return None
    mechanism = str(kwargs.get("sasl_mechanism") or "PLAIN")
    servers = kwargs.get("bootstrap_servers")
    for server in servers if isinstance(servers, list) else ():
        got = ask(server, mechanism, kwargs)
        if got is None:
            continue
        if got.error_code == 0 and mechanism in got.mechanisms:
            return None
        from .msk_iam import AUTH_KEY
        setting = "sasl.mechanism" + (", which kafka.auth: msk_iam sets"
                                      if AUTH_KEY in properties else "")
        how = (" (UNSUPPORTED_SASL_MECHANISM)" if got.error_code == UNSUPPORTED_SASL_MECHANISM
               else f" (error code {got.error_code})" if got.error_code else "")
        offered = ", ".join(got.mechanisms) or "none"
        return (f"Kafka at {got.server} does not offer SASL mechanism {mechanism} "
                f"({setting}){how}: its SaslHandshake answer lists {offered}; use one of "
                "those, or enable it on the brokers' listener")
    return None


def _tls(kwargs: ClientKwargs) -> ssl.SSLContext:
    """TLS as kafka-python sets it up from its ``ssl_*`` settings."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = bool(kwargs.get("ssl_check_hostname", True))
    cafile, certfile = _text(kwargs, "ssl_cafile"), _text(kwargs, "ssl_certfile")
    if cafile:
        ctx.load_verify_locations(cafile)
    else:
        ctx.load_default_certs()
    if certfile:
        ctx.load_cert_chain(certfile, _text(kwargs, "ssl_keyfile"),
                            _text(kwargs, "ssl_password"))
    return ctx


def _text(kwargs: ClientKwargs, name: str) -> str | None:
    value = kwargs.get(name)
    return str(value) if value is not None else None


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _read(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ValueError("the broker closed the connection")
        out += chunk
    return bytes(out)
