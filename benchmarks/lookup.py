"""Lookup throughput and latency of one broker, beside a bare aiohttp handler in the same run.

    .venv/bin/python benchmarks/lookup.py [--seconds 10] [--connections 32] [--topics 1000]

Starts a one-broker ``ballast standalone --no-load`` in its own process, creates a namespace,
looks every topic up once (so every bundle is owned: the cached, answered-here path), then
drives ``GET /lookup/v2/topic/persistent/public/bench/topic-N`` over random topics with wrk
(Debian's ``wrk``). The baseline is a bare aiohttp server (same framework, same event loop
policy) answering the same path pattern with the same JSON body, measured the same way.
Rounds alternate between the two servers and the medians are compared, so noise from other
work on the machine hits both alike. Prints a Markdown table and the ratio; the target is at
least 70 % of the bare handler's rate.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BARE_SERVER = textwrap.dedent(
    """
    import sys
    from aiohttp import web
    BODY = (b'{"brokerUrl":"pulsar://127.0.0.1:6650","brokerUrlTls":null,'
            b'"httpUrl":"http://127.0.0.1:8080","httpUrlTls":null,'
            b'"nativeUrl":"pulsar://127.0.0.1:6650"}')
    async def lookup(request):
        return web.Response(body=BODY, content_type="application/json")
    app = web.Application()
    app.router.add_get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", lookup)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
    """
)

WRK_SCRIPT = textwrap.dedent(
    """
    math.randomseed(7)
    request = function()
      return wrk.format("GET", "/lookup/v2/topic/persistent/public/bench/topic-" ..
                        math.random(0, {topics} - 1))
    end
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def request(method: str, url: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as response:
        return int(response.status)


def run_wrk(port: int, script: Path, seconds: int, connections: int) -> dict[str, float]:
    output = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    latency: dict[str, float] = {}
    for label in ("50", "99"):
        match = re.search(rf"\s{label}%\s+([\d.]+)(us|ms|s)", output)
        assert match is not None, output
        value, unit = float(match.group(1)), match.group(2)
        latency[label] = value / 1000 if unit == "us" else value if unit == "ms" else value * 1000
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "rate": rate,
        "p50_ms": latency["50"],
        "p99_ms": latency["99"],
        "non_2xx": float(errors.group(1)) if errors else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install -y wrk")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "lookup.lua"
        script.write_text(WRK_SCRIPT.replace("{topics}", str(args.topics)))
        broker_port = free_port()
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
                str(broker_port),
                "--broker-port",
                str(free_port()),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
        )
        bare_port = free_port()
        bare = subprocess.Popen([sys.executable, "-c", BARE_SERVER, str(bare_port)], cwd=REPO)
        try:
            base = f"http://127.0.0.1:{broker_port}"
            wait_http(f"{base}/admin/v2/namespaces/public")
            request(
                "PUT", f"{base}/admin/v2/namespaces/public/bench", {"bundles": {"numBundles": 16}}
            )
            for i in range(args.topics):  # own every bundle: lookups then hit the cached path
                wait_http(f"{base}/lookup/v2/topic/persistent/public/bench/topic-{i}")
            wait_http(f"http://127.0.0.1:{bare_port}/lookup/v2/topic/persistent/public/bench/x")
            rounds: dict[str, list[dict[str, float]]] = {
                "bare aiohttp handler": [],
                "ballast lookup": [],
            }
            for round_index in range(args.rounds):  # alternate: noise hits both alike
                order = [("bare aiohttp handler", bare_port), ("ballast lookup", broker_port)]
                for name, port in order if round_index % 2 == 0 else reversed(order):
                    rounds[name].append(run_wrk(port, script, args.seconds, args.connections))
            results = {
                name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                for name, runs in rounds.items()
            }
        finally:
            for process in (broker, bare):
                process.terminate()
                process.wait()
    print(
        f"wrk -t1 -c{args.connections} -d{args.seconds}s, {args.topics} topics in 16 owned "
        f"bundles; median of {args.rounds} alternating rounds\n"
    )
    print("| server | lookups/s | p50 ms | p99 ms | non-2xx |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, r in results.items():
        cells = [f"{r['rate']:,.0f}", f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}"]
        print(f"| {name} | {' | '.join(cells)} | {r['non_2xx']:.0f} |")
    ratio = results["ballast lookup"]["rate"] / results["bare aiohttp handler"]["rate"]
    print(f"\nballast / bare = {ratio:.2f} (target >= 0.70)")


if __name__ == "__main__":
    main()
