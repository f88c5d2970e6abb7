"""The usage page: served over a known ledger, loaded in headless Chromium (Debian's)."""

from __future__ import annotations

import base64
import html.parser
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import pytest

from hydra_proxy.usage import dashboard
from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.dashboard import ASSETS, basic_auth_key, dashboard_response
from hydra_proxy.usage.ledger import Ledger
from hydra_proxy.usage.record import UsageRecord
from support.usage_data import make_records

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NOW = 1_764_000_000.0 + 86400  # the records' second day
# Gitignored; HYDRA_TEST_ARTIFACTS moves it (a read-only checkout).
ARTIFACTS = Path(os.environ.get("HYDRA_TEST_ARTIFACTS", Path(__file__).parent.parent / "artifacts"))


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[tuple[Ledger, list[UsageRecord]]]:
    records = make_records(60, 31, start=NOW - 86400)  # 37.5 s apart: one or two days
    led = open_ledger(f"sqlite:{tmp_path / 'u.sqlite3'}")
    for rec in records:
        led.record(rec)
    led.flush()
    yield led, records
    led.close()


def test_data_json_matches_the_ledger(ledger: tuple[Ledger, list[UsageRecord]]) -> None:
    led, records = ledger
    status, content_type, body = dashboard_response(
        "/dashboard/data.json", "since=7d", led, now=NOW
    )
    assert (status, content_type) == (200, "application/json")
    doc = orjson.loads(body)
    assert doc["total"]["requests"] == 60
    assert sum(r["requests"] for r in doc["by_model"]) == 60
    assert sum(r["output_tokens"] for r in doc["by_day"]) == sum(r.output_tokens for r in records)
    newest = sorted(records, key=lambda r: r.time, reverse=True)
    assert [r["request_id"] for r in doc["latest"]] == [r.request_id for r in newest[:50]]
    assert dashboard_response("/dashboard/data.json", "since=bogus", led)[0] == 400
    assert dashboard_response("/dashboard/static/../../etc/passwd", "", led)[0] == 404
    assert dashboard_response("/dashboard/nope", "", led)[0] == 404
    status, content_type, body = dashboard_response("/dashboard", "", led)
    assert status == 200 and content_type.startswith("text/html")
    # Shipped assets only: no CDN, nothing fetched from another origin; every file of
    # static/ is served, and the page loads each script and style it names from there.
    static = Path(dashboard.__file__).parent / "static"
    assert {p.name for p in static.iterdir()} == set(ASSETS)
    for name in ASSETS:
        asset = dashboard_response(f"/dashboard/static/{name}", "", led)[2]
        assert b"http://" not in asset.replace(b"http://www.w3.org/2000/svg", b"")
        assert b"https://" not in asset
        assert b"<script>" not in asset and b" style=" not in asset  # nothing inline (CSP)
    loaded = re.findall(rb'(?:src|href)="/dashboard/static/([^"]+)"', body)
    assert sorted(n.decode() for n in loaded) == sorted(set(ASSETS) - {"index.html"})


def test_basic_auth_key() -> None:
    assert basic_auth_key(b"Basic " + base64.b64encode(b"me:sk-key")) == b"sk-key"
    assert basic_auth_key(b"Basic " + base64.b64encode(b"nokey")) is None
    assert basic_auth_key(b"Basic !!!") is None
    assert basic_auth_key(b"Bearer sk-key") is None
    assert basic_auth_key(None) is None


class _Page(html.parser.HTMLParser):
    """Collects table rows (by table id) and SVG bars (by chart id) of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[dict[str, str]]] = {}
        self.bars: dict[str, list[dict[str, str]]] = {}
        self.cells: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._svg: str | None = None
        self._cell: list[str] | None = None
        self.loaded = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "body" and a.get("data-loaded") == "true":
            self.loaded = True
        if tag == "table":
            self._table = a.get("id")
        elif tag == "svg":
            self._svg = a.get("id")
        elif tag == "tr" and self._table and ("data-request-id" in a or "data-key" in a):
            self.rows.setdefault(self._table, []).append(a)
            self.cells.setdefault(self._table, []).append([])
        elif tag == "td" and self._table in self.cells:
            self._cell = []
        elif tag == "rect" and self._svg and "bar" in a.get("class", ""):
            self.bars.setdefault(self._svg, []).append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag == "svg":
            self._svg = None
        elif tag == "td" and self._cell is not None and self._table in self.cells:
            self.cells[self._table][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


@contextmanager
def serve(led: Ledger) -> Iterator[str]:
    """The page over ``led`` from a small threaded HTTP server on loopback."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/dashboard/session":  # as a proxy without keys answers
                status, content_type = 200, "application/json"
                body = orjson.dumps({"role": "open", "name": None, "csrf": None, "ledger": True})
            else:
                status, content_type, body = dashboard_response(
                    parts.path, parts.query, led, now=NOW
                )
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def served(ledger: tuple[Ledger, list[UsageRecord]]) -> Iterator[tuple[str, list[UsageRecord]]]:
    led, records = ledger
    with serve(led) as base:
        yield base, records


def _chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1800",
             "--virtual-time-budget=15000"]  # fmt: skip
    return subprocess.run(
        [CHROMIUM, *flags, *extra, url], capture_output=True, text=True, timeout=180
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package 'chromium')")
def test_page_in_headless_chromium(served: tuple[str, list[UsageRecord]], tmp_path: Path) -> None:
    base, records = served
    url = f"{base}/dashboard?since=7d"
    done = _chromium(url, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    page = _Page()
    page.feed(done.stdout)
    assert page.loaded, done.stdout[-3000:]
    newest = sorted(records, key=lambda r: r.time, reverse=True)[:50]
    latest = page.rows["latest"]
    assert [r["data-request-id"] for r in latest] == [r.request_id for r in newest]
    for cells, rec in zip(page.cells["latest"], newest, strict=True):
        assert cells[3] == rec.target_model
        assert cells[4].split()[0] == str(rec.status)
        assert cells[8] == str(round(rec.latency_ms))
        assert cells[7] == ("unknown" if rec.cost_usd is None else f"{rec.cost_usd:.4f}")
    models = {r.target_model for r in records}
    assert {r["data-key"] for r in page.rows["by-model"]} == models
    # One cost bar per model, one input and one output bar per model in the tokens chart.
    cost_bars = {b["data-key"]: float(b["data-value"]) for b in page.bars["chart-cost-model"]}
    assert set(cost_bars) == models
    for model in models:
        assert cost_bars[model] == pytest.approx(
            sum(r.cost_usd or 0 for r in records if r.target_model == model)
        )
    token_bars = page.bars["chart-tokens-model"]
    assert len(token_bars) == 2 * len(models)
    out_bars = {
        b["data-key"]: int(float(b["data-value"])) for b in token_bars if b["data-part"] == "output"
    }
    assert out_bars == {
        m: sum(r.output_tokens for r in records if r.target_model == m) for m in models
    }
    days = {b["data-key"] for b in page.bars["chart-cost-day"]}
    assert len(days) in (1, 2)
    # The screenshot is kept as a test artifact.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "dashboard.png"
    done = _chromium(url, tmp_path / "profile2", f"--screenshot={shot}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"dashboard screenshot: {shot}")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian package 'chromium')")
def test_empty_ledger_page_in_headless_chromium(tmp_path: Path) -> None:
    led = open_ledger(f"sqlite:{tmp_path / 'empty.sqlite3'}")
    try:
        with serve(led) as base:
            done = _chromium(f"{base}/dashboard", tmp_path / "profile", "--dump-dom")
    finally:
        led.close()
    assert done.returncode == 0, done.stderr[-2000:]
    page = _Page()
    page.feed(done.stdout)
    assert page.loaded and not page.rows and not page.bars
    assert done.stdout.count(">no data</text>") == 4  # each chart says so
    assert "0 requests" in done.stdout
