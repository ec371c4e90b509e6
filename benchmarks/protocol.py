"""Messages per second and publish latency through one broker with the official client, beside
a minimal frame-echo server in the same framework, in the same run.

    .venv/bin/python benchmarks/protocol.py [--seconds 8] [--rounds 3] [--size 100]

The broker is a one-broker ``ballast standalone --no-load`` in its own process. The baseline
is a minimal asyncio-streams server, also in its own process: it reads frames the same way (a
chunk at a time, one write of answers per chunk) and answers each with one canned frame —
CONNECTED, a Connect lookup to itself, PRODUCER_SUCCESS, and for each SEND a SEND_RECEIPT with
the ids hand-parsed from it — no checksum, no topics, no subscriptions: the practical limit of
the language and the loop for this exchange on this machine.

Both are driven by ``ballast perf produce`` (the official ``pulsar-client``) on a
non-persistent topic, batching off (one frame per message): at full speed (rate and latency
under load) and at a fixed rate (latency). Rounds alternate between the two servers and medians
are compared, so other work on the machine hits both alike. Each server's CPU time is read from
/proc, giving its cost per message. Then the broker alone: with a consumer attached (messages
relayed to it), and with the client's batching on. Prints a Markdown table and the ratio; the
target is at least 50 % of the echo server's rate.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")

ECHO_SERVER = textwrap.dedent(
    """
    import asyncio, struct, sys
    U32 = struct.Struct(">I")

    def varint(v):
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        return bytes(out)

    def read_varint(b, i):
        r = s = 0
        while True:
            x = b[i]
            i += 1
            r |= (x & 0x7F) << s
            if x < 0x80:
                return r, i
            s += 7

    def field(n, body):
        return varint(n << 3 | 2) + varint(len(body)) + body

    def frame(kind, body):
        cmd = b"\\x08" + varint(kind) + field(kind, body)
        return U32.pack(len(cmd) + 4) + U32.pack(len(cmd)) + cmd

    def varints(body):
        out, i = {}, 0
        while i < len(body):
            key, i = read_varint(body, i)
            if key & 7 == 0:
                out[key >> 3], i = read_varint(body, i)
            else:
                n, i = read_varint(body, i)
                i += n
        return out

    def answer(cmd, url):
        kind = cmd[1]
        _, i = read_varint(cmd, 2)
        n, i = read_varint(cmd, i)
        body = cmd[i:i + n]
        if kind == 6:  # SEND -> SEND_RECEIPT{producer_id, sequence_id, (0, 0)}
            producer, j = read_varint(body, 1)
            sequence, _ = read_varint(body, j + 1)
            return frame(7, b"\\x08" + varint(producer) + b"\\x10" + varint(sequence)
                         + b"\\x1a\\x04\\x08\\x00\\x10\\x00")
        f = varints(body)
        if kind == 2:  # CONNECT
            return frame(3, field(1, b"echo") + b"\\x10\\x14\\x18" + varint(5 << 20))
        if kind == 21:  # PARTITIONED_METADATA
            return frame(22, b"\\x08\\x00\\x10" + varint(f[2]) + b"\\x18\\x00")
        if kind == 23:  # LOOKUP
            return frame(24, field(1, url) + b"\\x18\\x01\\x20" + varint(f[2]) + b"\\x28\\x01")
        if kind == 5:  # PRODUCER
            return frame(17, b"\\x08" + varint(f[3]) + field(2, b"echo-" + varint(f[2])))
        if kind in (15, 16):  # CLOSE_PRODUCER / CLOSE_CONSUMER
            return frame(13, b"\\x08" + varint(f[2]))
        if kind == 18:  # PING
            return frame(19, b"")
        return None

    async def serve(reader, writer, url):
        pending = b""
        while True:
            data = await reader.read(262144)
            if not data:
                break
            if pending:
                data = pending + data
            out = []
            pos, n = 0, len(data)
            while n - pos >= 4:
                end = pos + 4 + U32.unpack_from(data, pos)[0]
                if end > n:
                    break
                size = U32.unpack_from(data, pos + 4)[0]
                reply = answer(data[pos + 8:pos + 8 + size], url)
                if reply:
                    out.append(reply)
                pos = end
            pending = data[pos:]
            if out:
                writer.write(b"".join(out))
        writer.close()

    async def main(port):
        url = f"pulsar://127.0.0.1:{port}".encode()
        server = await asyncio.start_server(
            lambda r, w: serve(r, w, url), "127.0.0.1", port
        )
        await server.serve_forever()

    asyncio.run(main(int(sys.argv[1])))
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_http(url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime, all threads


def perf(verb: str, port: int, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ballast",
            "perf",
            verb,
            "bench",
            "--url",
            f"pulsar://127.0.0.1:{port}",
            "--json",
            *args,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def result_of(process: subprocess.Popen[str]) -> dict[str, float]:
    out, _ = process.communicate(timeout=300)
    summary = json.loads(out)
    latency = summary["latencyMs"]
    return {
        "rate": float(summary["rate"]),
        "messages": float(summary["messages"]),
        "errors": float(summary["errors"]),
        "p50": float(latency["p50"]),
        "p99": float(latency["p99"]),
        "p999": float(latency["p99.9"]),
    }


def produce(port: int, server_pid: int, seconds: int, size: int, *extra: str) -> dict[str, float]:
    before = cpu_seconds(server_pid)
    result = result_of(
        perf("produce", port, "--duration", str(seconds), "--size", str(size), *extra)
    )
    used = cpu_seconds(server_pid) - before
    result["server_us"] = used / max(result["messages"], 1) * 1e6
    return result


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--fixed-rate", type=int, default=5000)
    args = parser.parse_args()
    web, binary, echo_port = free_port(), free_port(), free_port()
    broker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ballast",
            "standalone",
            "--no-load",
            "--brokers",
            "1",
            "--port",
            str(web),
            "--broker-port",
            str(binary),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    echo = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(echo_port)], cwd=REPO)
    rows: list[tuple[str, str, dict[str, float]]] = []
    try:
        wait_http(f"http://127.0.0.1:{web}/admin/v2/namespaces/public/default")
        wait_port(binary)
        wait_port(echo_port)
        servers = {"echo": (echo_port, echo.pid), "ballast": (binary, broker.pid)}
        produce(binary, broker.pid, 2, args.size)  # warm up: topic loaded, code paths hot
        produce(echo_port, echo.pid, 2, args.size)
        modes = {
            "full speed": ("--rate", "0"),
            f"{args.fixed_rate:,} msg/s": ("--rate", str(args.fixed_rate)),
        }
        for mode, extra in modes.items():
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
            for round_index in range(args.rounds):  # alternate: noise hits both alike
                order = list(servers) if round_index % 2 == 0 else list(reversed(servers))
                for name in order:
                    port, pid = servers[name]
                    runs[name].append(produce(port, pid, args.seconds, args.size, *extra))
            for name in servers:
                rows.append((f"{name} (produce)", mode, median(runs[name])))
        consumer = perf("consume", binary, "--duration", str(args.seconds + 4))
        time.sleep(2)  # subscribed before the producer starts
        relayed = produce(binary, broker.pid, args.seconds, args.size, "--rate", "0")
        consumed = result_of(consumer)
        relayed["consumed"] = consumed["messages"]
        rows.append(("ballast (produce + consume)", "full speed", relayed))
        batched = produce(binary, broker.pid, args.seconds, args.size, "--rate", "0", "--batching")
        rows.append(("ballast (produce, client batching)", "full speed", batched))
    finally:
        for process in (broker, echo):
            process.terminate()
            process.wait()
    print(
        f"ballast perf produce, {args.size}-byte messages on one non-persistent topic, "
        f"{args.seconds} s per run; median of {args.rounds} alternating rounds for the "
        "echo/ballast pairs\n"
    )
    print("| server | load | msg/s | publish p50 ms | p99 ms | p99.9 ms | server CPU µs/msg |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, mode, r in rows:
        cells = [
            f"{r['rate']:,.0f}",
            f"{r['p50']:.2f}",
            f"{r['p99']:.2f}",
            f"{r['p999']:.2f}",
            f"{r['server_us']:.1f}",
        ]
        note = (
            f" (consumer got {r['consumed']:,.0f} of {r['messages']:,.0f})"
            if "consumed" in r
            else ""
        )
        print(f"| {name}{note} | {mode} | {' | '.join(cells)} |")
    by_name = {(name, mode): r for name, mode, r in rows}
    ratio = (
        by_name[("ballast (produce)", "full speed")]["rate"]
        / by_name[("echo (produce)", "full speed")]["rate"]
    )
    cost = (
        by_name[("echo (produce)", "full speed")]["server_us"]
        / by_name[("ballast (produce)", "full speed")]["server_us"]
    )
    print(
        f"\nballast / echo = {ratio:.2f} (target >= 0.50); "
        f"echo CPU per message / ballast's = {cost:.2f}"
    )


if __name__ == "__main__":
    main()
