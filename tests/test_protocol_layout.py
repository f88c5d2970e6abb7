"""Every protocol folder has the same files for the same jobs, in Python and in Rust: the
layout table of docs/ARCHITECTURE.md names, for each job, its file in a protocol's Python
package and in its Rust folder, and each of them exists for every protocol of the code's
own protocol table (or for the protocols the row names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hydra_proxy.config.protocols import PROTOCOLS as NAMES
from hydra_proxy.transducers import COMPOSITIONS

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## One layout per protocol"
# Every protocol is a folder in both trees.
PROTOCOLS = sorted(NAMES)
# The jobs every protocol has, on both sides of the proxy.
EVERY = {
    "request reader",
    "request writer",
    "response reader",
    "response writer",
    "decoder",
    "encoder",
}


def layout() -> list[tuple[str, str | None, str | None, list[str]]]:
    """The table's rows: (job, Python file, Rust file, protocols); None for no file."""
    text = (ROOT / "docs/ARCHITECTURE.md").read_text("utf-8")
    assert HEADING in text, "docs/ARCHITECTURE.md no longer has its layout table"
    section = text[text.index(HEADING) :].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or set(cells[1]) <= {"-", " "}:
            continue
        job, python, rust, protocols = cells
        if job == "job":
            continue  # the header
        named = re.findall(r"`([^`]+)`", protocols)
        rows.append(
            (
                job,
                python.strip("`") if python.startswith("`") else None,
                rust.strip("`") if rust.startswith("`") else None,
                PROTOCOLS if protocols == "every" else named,
            )
        )
    return rows


ROWS = layout()


def test_every_protocol_has_a_stream_folder_in_both_trees() -> None:
    assert {protocol for pair in COMPOSITIONS for protocol in pair} == set(PROTOCOLS)


def test_the_table_names_every_job_for_every_protocol() -> None:
    jobs = {job.split(":")[0]: protocols for job, _, _, protocols in ROWS}
    assert {job: jobs.get(job) for job in EVERY} == {job: PROTOCOLS for job in EVERY}
    assert {p for _, _, _, protocols in ROWS for p in protocols} <= set(PROTOCOLS)


def _python_module(path: Path) -> bool:
    """A module or a package (a reader split by job is a folder whose `__init__` is the
    entry): either is imported by the same dotted path."""
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_documented_file_exists(protocol: str) -> None:
    missing = []
    for job, python, rust, protocols in ROWS:
        if protocol not in protocols:
            continue
        if python is not None:
            path = ROOT / "python/hydra_proxy" / protocol / python
            if not _python_module(path.with_suffix("")):
                missing.append(f"{job}: {path.relative_to(ROOT)}")
        if rust is not None:
            path = ROOT / "rust/src" / protocol / rust
            if not path.is_file():
                missing.append(f"{job}: {path.relative_to(ROOT)}")
    assert missing == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_rust_module_of_a_protocol_has_its_job(protocol: str) -> None:
    """A Rust protocol folder holds only the files the table names (a newcomer who knows
    one folder knows them all); `mod.rs` and a module's own folder of parts aside."""
    named = {rust for _, _, rust, protocols in ROWS if rust is not None and protocol in protocols}
    present = {p.name for p in (ROOT / "rust/src" / protocol).glob("*.rs") if p.name != "mod.rs"}
    assert present - named == set()
