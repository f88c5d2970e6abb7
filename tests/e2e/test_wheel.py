"""The prebuilt wheel: `maturin build --release --zig --compatibility manylinux2014` makes one
that installs into a fresh venv and runs with no Rust toolchain on PATH (what a `pip install`
user gets), on any x86-64 Linux with glibc 2.17 or later (RHEL 7+, Ubuntu 18.04+, Debian 10+,
Amazon Linux 2): zig links it against glibc 2.17's symbol versions, and `auditwheel` checks
that nothing newer, and no library outside the manylinux set, is referenced."""

from __future__ import annotations

import http.client
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.server import free_port

ROOT = Path(__file__).resolve().parent.parent.parent
pytestmark = pytest.mark.e2e


# The oldest glibc the wheel may need: manylinux2014 is glibc 2.17.
MANYLINUX2014_GLIBC = (2, 17)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    bin_dir = Path(sys.executable).parent
    maturin = shutil.which("maturin") or str(bin_dir / "maturin")
    # maturin finds zig as `python3 -m ziglang` (the ziglang wheel): this venv's bin first.
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    built_by = subprocess.run(
        [maturin, "build", "--release", "--zig", "--compatibility", "manylinux2014",
         "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built_by.returncode == 0, built_by.stderr[-4000:]
    (built,) = out.glob("hydra_proxy-*.whl")
    assert "abi3" in built.name, "one wheel for every CPython >= 3.10"
    return built


def test_wheel_is_manylinux2014(wheel: Path) -> None:
    """Tagged manylinux2014 and, by auditwheel's reading of the extension itself, needing
    no glibc symbol newer than 2.17 and no shared library outside the manylinux set."""
    assert wheel.name.endswith("-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"), wheel.name
    auditwheel = shutil.which("auditwheel") or str(Path(sys.executable).parent / "auditwheel")
    shown = subprocess.run(
        [auditwheel, "show", "--json", str(wheel)], capture_output=True, check=True
    ).stdout
    report = orjson.loads(shown)
    assert report["version"] == 1, report  # the layout read below
    assert report["pure"] is False  # the native core is in it
    assert report["overall_tag"] == "manylinux_2_17_x86_64", report
    assert report["external_libs"] == {}, report  # nothing to bundle
    glibc = [
        tuple(int(part) for part in version.removeprefix("GLIBC_").split("."))
        for versions in report["versioned_symbols"].values()
        for version in versions
        if version.startswith("GLIBC_")
    ]
    assert glibc, report  # it does link glibc: an empty list would prove nothing
    assert max(glibc) <= MANYLINUX2014_GLIBC, report["versioned_symbols"]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, str(wheel)], check=True, env=_no_rust_env(venv))
    return venv


def _no_rust_env(venv: Path) -> dict[str, str]:
    """PATH with the venv and the system only: no cargo, rustc or maturin anywhere."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "HYDRA_", "CARGO", "RUSTUP"))
    }
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    env["HOME"] = str(venv)
    for tool in ("cargo", "rustc"):
        assert shutil.which(tool, path=env["PATH"]) is None, f"{tool} must not be on PATH"
    return env


def test_wheel_runs_without_rust(venv: Path, tmp_path: Path) -> None:
    env = _no_rust_env(venv)
    help_text = subprocess.run(
        [str(venv / "bin" / "hydra-proxy"), "--help"],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "serve" in help_text and "mock" in help_text
    # The native core is inside the wheel (not the repo's python/ tree).
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import hydra_proxy._native as n; print(n.__file__)"],
        env=env, cwd=tmp_path, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert str(venv) in where and ".so" in where

    with MockServer() as mock:
        mock.script([{"text": "from the wheel", "chunk_size": 5}])
        port = free_port()
        log = tmp_path / "proxy.log"
        with log.open("wb") as log_file:
            proxy = subprocess.Popen(
                [str(venv / "bin" / "hydra-proxy"), "serve", "--port", str(port), "--base-url", mock.url + "/v1",
                 "--impl", "native", "--no-mock"],
                env={**env, "OPENAI_API_KEY": "sk-test"}, cwd=tmp_path, stdout=log_file, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                body = _post_when_up(port, {"model": "claude-x", "max_tokens": 50, "stream": True,
                                            "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
            finally:
                proxy.terminate()
                proxy.wait(10)
        assert b"event: message_start" in body
        assert b"event: message_stop" in body
        text = b"".join(
            orjson.loads(line[6:])["delta"]["text"].encode()
            for line in body.split(b"\n")
            if line.startswith(b"data: ") and b"text_delta" in line
        )
        assert text == b"from the wheel"
        assert "transducers native" in log.read_text()


def _post_when_up(port: int, payload: dict[str, object]) -> bytes:
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request(
                "POST", "/v1/messages", orjson.dumps(payload), {"content-type": "application/json"}
            )
            response = conn.getresponse()
            assert response.status == 200
            return response.read()
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_wheel_ships_usage_data(wheel: Path) -> None:
    """The price table and the usage page's assets are package data, inside the wheel."""
    import zipfile

    from hydra_proxy.usage.dashboard import ASSETS

    names = set(zipfile.ZipFile(wheel).namelist())
    assert len(ASSETS) == 5
    for name in (
        "hydra_proxy/data/pricing.toml",
        *(f"hydra_proxy/usage/dashboard/static/{asset}" for asset in ASSETS),
    ):
        assert name in names, name
