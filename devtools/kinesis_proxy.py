"""A forwarding proxy in front of kinesis-local that makes SubscribeToShard usable from botocore.

kinesis-local answers SubscribeToShard with a chunked ``application/vnd.amazon.eventstream``
whose first frame is a SubscribeToShardEvent (or an exception frame); botocore insists that the
first frame be an ``initial-response`` event. This proxy relays everything else verbatim
(keep-alive aware) and, for a SubscribeToShard event stream:

* if the first frame is an exception (ResourceNotFound, ResourceInUse…), answers a plain
  ``400`` JSON error, as real Kinesis does, so ``subscribe_to_shard()`` raises;
* otherwise inserts one chunk holding an ``initial-response`` event, then relays the rest.

``--session-lifetime S`` answers ``ExpiredTokenException`` to a request signed with temporary
credentials (those with a session token) whose access key was first seen more than S seconds
before, as AWS refuses credentials past their session's end: tests use it to show that a read
longer than a role session keeps working with refreshing credentials.

``--throttle OPERATION:N`` answers ``LimitExceededException`` to the first N calls of an
operation (e.g. ``DescribeStreamConsumer:3``, which AWS limits to 20 calls a second per stream).

``--drop-subscriptions N`` cuts the first N subscriptions in the middle of their first event
(half of it relayed, then the connection reset), as a network drop would: tests use it to
show that a reader resubscribes.

``GET /_proxy/calls`` answers the calls relayed so far as JSON, operation → stream → count
(the stream a request names by ``StreamName``, ``StreamARN`` or ``ConsumerARN``; "" for
none, as a GetRecords with only an iterator), and under "SubscribeToShard records" the
records relayed in SubscribeToShardEvents: tests judge with it, outside streamslice, which
API a read used.

Test and demo tooling (and the docker-compose emulator); listens on 127.0.0.1 by default.
    python -m devtools.kinesis_proxy --listen-port 4579 --upstream-port 4568
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import struct
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field

Chunk = tuple[bytes, bytes]  # a chunk's raw bytes with framing, and its payload

log = logging.getLogger("kinesis-proxy")
MAX_HEAD = 64 * 1024
CALLS_PATH = "/_proxy/calls"
RECORDS = "SubscribeToShard records"


def _header(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return struct.pack("!B", len(n)) + n + b"\x07" + struct.pack("!H", len(v)) + v


def frame(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    """One event-stream message: prelude (lengths + CRC), headers, payload, message CRC."""
    hb = b"".join(_header(k, v) for k, v in headers)
    prelude = struct.pack("!II", 12 + len(hb) + len(payload) + 4, len(hb))
    body = prelude + struct.pack("!I", zlib.crc32(prelude)) + hb + payload
    return body + struct.pack("!I", zlib.crc32(body))


INITIAL_RESPONSE = frame([(":event-type", "initial-response"), (":message-type", "event"),
                          (":content-type", "application/x-amz-json-1.1")], b"{}")


def first_frame(buf: bytes) -> tuple[dict[str, str | bytes], bytes] | None:
    """(headers, payload) of the first complete frame in ``buf``, or None."""
    if len(buf) < 12:
        return None
    total, hlen = struct.unpack_from("!II", buf, 0)
    if len(buf) < total:
        return None
    headers: dict[str, str | bytes] = {}
    p, end = 12, 12 + hlen
    while p < end:
        nl = buf[p]
        name = buf[p + 1:p + 1 + nl].decode()
        p += 1 + nl
        kind = buf[p]
        p += 1
        if kind not in (6, 7):
            break
        vl, = struct.unpack_from("!H", buf, p)
        value = buf[p + 2:p + 2 + vl]
        p += 2 + vl
        headers[name] = value.decode() if kind == 7 else value
    return headers, buf[end:total - 4]


def parse_head(raw: bytes) -> tuple[str, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    return lines[0], headers


async def read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        return None  # clean end between messages


async def read_chunk(reader: asyncio.StreamReader) -> Chunk:
    """One chunk: (raw bytes with framing, payload); payload is b'' for the last chunk."""
    size_line = await reader.readuntil(b"\r\n")
    size = int(size_line.split(b";")[0].strip(), 16)
    if size == 0:
        raw = size_line
        while True:
            line = await reader.readuntil(b"\r\n")
            raw += line
            if line == b"\r\n":
                return raw, b""
    data = await reader.readexactly(size + 2)
    return size_line + data, data[:-2]


async def relay_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     headers: dict[str, str], status: int | None = None,
                     method: str = "POST") -> bool:
    """Relay one body; False when it was close-delimited (the connection must end)."""
    if method == "HEAD" or (status is not None and (status < 200 or status in (204, 304))):
        return True
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            raw, payload = await read_chunk(reader)
            writer.write(raw)
            await writer.drain()
            if not payload:
                return True
    if "content-length" in headers:
        left = int(headers["content-length"])
        while left:
            data = await reader.read(min(left, 65536))
            if not data:
                raise ConnectionError("upstream ended inside a body")
            writer.write(data)
            await writer.drain()
            left -= len(data)
        return True
    if status is None:
        return True
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    return False


def as_http_error(headers: dict[str, str | bytes], payload: bytes) -> bytes:
    kind = str(headers.get(":exception-type", "InternalFailure"))
    try:
        message = json.loads(payload).get("message", "")
    except ValueError:
        message = payload.decode("utf-8", "replace")
    body = json.dumps({"__type": kind, "message": message}).encode()
    status = "500 Internal Server Error" if kind == "InternalFailure" else "400 Bad Request"
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.1\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n").encode() + body


async def watch_client(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter,
                       upstream_writer: asyncio.StreamWriter) -> None:
    """A subscriber that hangs up must release the server's per-(consumer, shard) lease now."""
    while not (client_reader.at_eof() or client_writer.transport.is_closing()):
        await asyncio.sleep(0.05)
    upstream_writer.transport.abort()


async def relay_subscription(up_r: asyncio.StreamReader, up_w: asyncio.StreamWriter,
                             cl_r: asyncio.StreamReader, cl_w: asyncio.StreamWriter,
                             head: bytes, peek: float, drops: dict[str, int],
                             events: EventRecords) -> bool:
    watcher = asyncio.ensure_future(watch_client(cl_r, cl_w, up_w))
    try:
        task = asyncio.ensure_future(read_chunk(up_r))  # never cancel a half-read chunk
        done, _ = await asyncio.wait({task}, timeout=peek)
        first = task.result() if done else None
        if first is not None and first[1]:
            parsed = first_frame(first[1])
            if parsed and parsed[0].get(":message-type") == "exception":
                cl_w.write(as_http_error(*parsed))
                await cl_w.drain()
                while (await read_chunk(up_r))[1]:
                    pass
                return True
        cl_w.write(head + b"%x\r\n" % len(INITIAL_RESPONSE) + INITIAL_RESPONSE + b"\r\n")
        await cl_w.drain()
        chunk = first if first is not None else await task
        if drops["left"] > 0 and chunk[1]:
            drops["left"] -= 1
            cl_w.write(chunk[0][:len(chunk[0]) // 2])
            await cl_w.drain()
            cl_w.transport.abort()
            up_w.transport.abort()  # and release the server's lease on the shard
            return False
        while True:
            cl_w.write(chunk[0])
            await cl_w.drain()
            if not chunk[1]:
                return True
            events.add(chunk[1])
            chunk = await read_chunk(up_r)
    finally:
        watcher.cancel()


@dataclass
class Sessions:
    """What the proxy keeps across connections: ``--session-lifetime`` and when each access
    key was first seen; ``--throttle``'s calls still to refuse, per operation; the calls
    relayed (``GET /_proxy/calls``)."""

    lifetime: float = 0.0
    seen: dict[str, float] = field(default_factory=dict)
    throttle: dict[str, int] = field(default_factory=dict)
    calls: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def count(self, req_h: dict[str, str], body: bytes) -> str:
        """Counts the request; returns the stream it names."""
        operation, stream = req_h.get("x-amz-target", "").rpartition(".")[2], stream_of(body)
        if operation:
            self.calls[operation][stream] += 1
        return stream


class EventRecords:
    """Counts the records in the SubscribeToShardEvents relayed for a stream, as
    ``calls["SubscribeToShard records"]``: frames may span chunks."""

    def __init__(self, calls: defaultdict[str, Counter[str]], stream: str) -> None:
        self.counts, self.stream, self.buf = calls[RECORDS], stream, b""

    def add(self, payload: bytes) -> None:
        self.buf += payload
        while (found := first_frame(self.buf)) is not None:
            headers, data = found
            self.buf = self.buf[struct.unpack_from("!I", self.buf, 0)[0]:]
            if headers.get(":event-type") == "SubscribeToShardEvent":
                self.counts[self.stream] += len(json.loads(data).get("Records", []))


def stream_of(body: bytes) -> str:
    """The stream a request's JSON names: ``StreamName``, or the name in its ``StreamARN`` or
    ``ConsumerARN`` (``arn:aws:kinesis:…:stream/NAME[/consumer/…]``); "" for none."""
    try:
        fields = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(fields, dict):
        return ""
    if isinstance(fields.get("StreamName"), str):
        return str(fields["StreamName"])
    arn = fields.get("StreamARN") or fields.get("ConsumerARN") or ""
    return str(arn).partition(":stream/")[2].split("/", 1)[0]


def calls_response(sessions: Sessions) -> bytes:
    body = json.dumps(sessions.calls).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body) + body)


EXPIRED = json.dumps({"__type": "ExpiredTokenException",
                      "message": "The security token included in the request is expired"})


def expired(req_h: dict[str, str], sessions: Sessions) -> bool:
    """Whether the request's temporary credentials are past ``sessions.lifetime``."""
    import time
    if not sessions.lifetime or "x-amz-security-token" not in req_h:
        return False
    key = req_h.get("authorization", "").partition("Credential=")[2].split("/", 1)[0]
    first = sessions.seen.setdefault(key, time.monotonic())
    return time.monotonic() - first > sessions.lifetime


def throttled(req_h: dict[str, str], sessions: Sessions) -> str | None:
    """A LimitExceededException for the operation's first N calls (``--throttle``)."""
    operation = req_h.get("x-amz-target", "").rpartition(".")[2]
    left = sessions.throttle
    if left.get(operation, 0) <= 0:
        return None
    left[operation] -= 1
    return json.dumps({"__type": "LimitExceededException",
                       "message": f"Rate exceeded for {operation}"})


async def handle(  # noqa: C901 - one HTTP exchange's steps in order; split, the relay reads worse
        cl_r: asyncio.StreamReader, cl_w: asyncio.StreamWriter, upstream: tuple[str, int],
        peek: float, drops: dict[str, int], sessions: Sessions | None = None) -> None:
    up_r: asyncio.StreamReader | None = None
    up_w: asyncio.StreamWriter | None = None
    sessions = sessions if sessions is not None else Sessions()
    try:
        while True:
            request = await read_head(cl_r)
            if request is None:
                return
            line, req_h = parse_head(request)
            method, _, target = line.partition(" ")
            if method == "GET" and target.split(" ", 1)[0] == CALLS_PATH:
                cl_w.write(calls_response(sessions))
                await cl_w.drain()
                continue
            refusal = EXPIRED if expired(req_h, sessions) else throttled(req_h, sessions)
            if refusal:
                await cl_r.readexactly(int(req_h.get("content-length", "0")))
                body = refusal.encode()
                cl_w.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.1"
                           b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                await cl_w.drain()
                continue
            if up_w is None:
                up_r, up_w = await asyncio.open_connection(*upstream, limit=MAX_HEAD)
            assert up_r is not None
            up_w.write(request)
            stream = ""
            if "content-length" in req_h:
                body = await cl_r.readexactly(int(req_h["content-length"]))
                up_w.write(body)
                stream = sessions.count(req_h, body)
            else:
                await relay_body(cl_r, up_w, req_h, None, method)
            while True:  # pass interim 1xx responses through
                response = await read_head(up_r)
                if response is None:
                    raise ConnectionError("upstream closed before answering")
                status_line, resp_h = parse_head(response)
                status = int(status_line.split()[1])
                if status >= 200 or status == 101:
                    break
                cl_w.write(response)
            subscription = (req_h.get("x-amz-target", "").endswith(".SubscribeToShard")
                            and status == 200
                            and "eventstream" in resp_h.get("content-type", "")
                            and "chunked" in resp_h.get("transfer-encoding", "").lower())
            if subscription:
                keep = await relay_subscription(up_r, up_w, cl_r, cl_w, response, peek,
                                                drops, EventRecords(sessions.calls, stream))
            else:
                cl_w.write(response)
                keep = await relay_body(up_r, cl_w, resp_h, status, method)
            await cl_w.drain()
            if not keep or "close" in (req_h.get("connection", "") +
                                       resp_h.get("connection", "")).lower():
                return
    except (ConnectionError, asyncio.IncompleteReadError, ValueError) as exc:
        log.debug("connection ended: %r", exc)
    finally:
        for writer in (cl_w, up_w):
            if writer is not None:
                writer.close()


async def serve(listen_port: int, upstream_port: int, peek: float = 0.25,
                listen_host: str = "127.0.0.1", upstream_host: str = "127.0.0.1",
                drop_subscriptions: int = 0, session_lifetime: float = 0.0,
                throttle: dict[str, int] | None = None) -> None:
    drops = {"left": drop_subscriptions}
    sessions = Sessions(session_lifetime, throttle=dict(throttle or {}))
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, (upstream_host, upstream_port), peek, drops, sessions),
        listen_host, listen_port, limit=MAX_HEAD)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--upstream-port", type=int, required=True)
    ap.add_argument("--listen-host", default="127.0.0.1", help="0.0.0.0 inside a container")
    ap.add_argument("--upstream-host", default="127.0.0.1")
    ap.add_argument("--drop-subscriptions", type=int, default=0, metavar="N",
                    help="cut the first N subscriptions mid-event (tests)")
    ap.add_argument("--session-lifetime", type=float, default=0.0, metavar="S",
                    help="refuse temporary credentials S seconds after first use (tests)")
    ap.add_argument("--throttle", action="append", default=[], metavar="OPERATION:N",
                    help="LimitExceededException for an operation's first N calls (tests)")
    args = ap.parse_args()
    throttle = {op: int(n) for op, _, n in (t.partition(":") for t in args.throttle)}
    logging.basicConfig(level=logging.WARNING)
    try:
        asyncio.run(serve(args.listen_port, args.upstream_port, listen_host=args.listen_host,
                          upstream_host=args.upstream_host,
                          drop_subscriptions=args.drop_subscriptions,
                          session_lifetime=args.session_lifetime, throttle=throttle))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
