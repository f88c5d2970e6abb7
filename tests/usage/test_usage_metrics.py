"""Prometheus metrics: multiprocess sums, bounded labels."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hydra_proxy.usage.metrics import OTHER, LabelCap, Metrics, render, setup_multiprocess_dir
from hydra_proxy.usage.pricing import default_table
from hydra_proxy.usage.record import UsageRecord
from support.usage_data import make_records

WRITER = Path(__file__).parent.parent / "support" / "usage_writer.py"


def samples(body: bytes) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = defaultdict(float)
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] += s.value
    return out


def total(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= ls)


@pytest.fixture
def multiproc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    directory = setup_multiprocess_dir(tmp_path / "prom")
    yield directory
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def test_two_worker_processes_add_up_exactly(multiproc: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(__file__).parents[2] / "python"), env.get("PYTHONPATH")])
    )
    env["USAGE_GO"] = str(tmp_path / "go")
    env["USAGE_STOP"] = str(tmp_path / "stop")
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), "metrics", str(multiproc), str(seed), "400"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    (tmp_path / "go").touch()
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "400", proc.stderr.read() if proc.stderr else ""
    records: list[UsageRecord] = make_records(400, 1) + make_records(400, 2)
    _, body = render()
    found = samples(body)
    assert total(found, "hydra_requests_total") == 800
    for status in (200, 429, 502):
        assert total(found, "hydra_requests_total", status=str(status)) == sum(
            r.status == status for r in records
        )
    for kind, field in (("input", "input_tokens"), ("output", "output_tokens"),
                        ("cache_read", "cache_read_tokens"), ("reasoning", "reasoning_tokens")):  # fmt: skip
        assert total(found, "hydra_tokens_total", kind=kind) == sum(
            getattr(r, field) for r in records
        )
    assert total(found, "hydra_cost_usd_total") == pytest.approx(
        sum(r.cost_usd or 0 for r in records)
    )
    assert total(found, "hydra_requests_unpriced_total") == sum(r.cost_usd is None for r in records)
    assert total(found, "hydra_request_duration_seconds_count") == 800
    assert total(found, "hydra_request_duration_seconds_sum") == pytest.approx(
        sum(r.latency_ms for r in records) / 1000
    )
    assert total(found, "hydra_time_to_first_byte_seconds_count") == sum(
        r.ttfb_ms is not None for r in records
    )
    assert total(found, "hydra_upstream_errors_total", error_type="rate_limit_error") == sum(
        r.error_type is not None for r in records
    )
    # Live gauge: each worker has one stream open while it runs.
    assert total(found, "hydra_open_streams", route="*", provider="openai") == 2
    # Per model, Sonnet from the fixtures is counted under its own name.
    sonnet = sum(r.target_model == "claude-sonnet-4-5-20250929" for r in records)
    assert (
        sonnet
        and total(found, "hydra_requests_total", model="claude-sonnet-4-5-20250929") == sonnet
    )
    (tmp_path / "stop").touch()
    for proc in procs:
        proc.wait(timeout=60)
        assert proc.returncode == 0
    # A worker that shut down leaves the live sum; its counters stay.
    found = samples(render()[1])
    assert total(found, "hydra_open_streams") == 0
    assert total(found, "hydra_requests_total") == 800


def test_single_process_render(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    metrics = Metrics()
    for rec in make_records(30, 9):
        metrics.observe(rec)
    content_type, body = render(metrics)
    assert content_type.startswith("text/plain")
    assert total(samples(body), "hydra_requests_total") == 30


def test_label_sets_are_bounded() -> None:
    prices = default_table()
    cap = LabelCap(3, known=("my-model",), is_known=lambda m: prices.lookup(m) is not None)
    assert cap("my-model") == "my-model"
    extras = [cap(f"random-{i}") for i in range(10)]
    assert extras[:3] == ["random-0", "random-1", "random-2"] and set(extras[3:]) == {OTHER}
    priced = [cap(f"gpt-4o-mini-{i}") for i in range(10)]  # a glob matches endless names
    assert priced[:3] == ["gpt-4o-mini-0", "gpt-4o-mini-1", "gpt-4o-mini-2"] and set(
        priced[3:]
    ) == {OTHER}
    assert cap("my-model") == "my-model" and cap("random-1") == "random-1"
    assert cap('evil"label\nname') in (OTHER,)
    assert cap(None) == "none"
    clean = LabelCap(3)
    assert clean('a"b\nc') == "a_b_c"
    many = LabelCap(2)
    for i in range(10_000):
        many(f"m{i}")
    assert len(many.seen) <= 4 * 2


def test_observe_with_overflowing_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    metrics = Metrics(max_models=2)
    base = make_records(1, 1)[0]

    for i in range(20):
        metrics.observe(base._replace(target_model=f"unpriced-{i}", cost_usd=None))
    found = samples(render(metrics)[1])
    models = {dict(ls)["model"] for (n, ls) in found if n == "hydra_requests_total"}
    assert models == {"unpriced-0", "unpriced-1", OTHER}
    assert total(found, "hydra_requests_total", model=OTHER) == 18


def test_setup_empties_only_old_metric_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    directory = tmp_path / "prom"
    directory.mkdir()
    (directory / "counter_4242.db").write_bytes(b"old")
    (directory / "keep.txt").write_text("not ours")
    try:
        assert setup_multiprocess_dir(directory) == directory
        assert sorted(p.name for p in directory.iterdir()) == ["keep.txt"]
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(directory)
    finally:
        os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        from prometheus_client import values

        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def test_a_label_never_changes_once_given() -> None:
    cap = LabelCap(2, known=("late-known",), is_known=lambda m: m.startswith("priced-"))
    cap("a"), cap("b")  # the two extras
    for i in range(100):  # the memo fills up with values that became "other"
        assert cap(f"x{i}") == OTHER
    assert [cap("priced-1") for _ in range(5)] == ["priced-1"] * 5
    assert [cap("late-known") for _ in range(5)] == ["late-known"] * 5
    assert cap("a") == "a" and cap("b") == "b"
