"""The Redis deployments teams run, started on loopback by the tests from Debian's
packages: one server over TLS with an ACL user (a CA and a certificate made here), a
primary and a replica watched by a Sentinel, and a Redis Cluster of three primaries."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hydra_proxy.mock.server import free_port

USER, PASSWORD = "hydra", "s3cret-pass"
SERVICE = "hydra-primary"


def why_unavailable(*tools: str) -> str | None:
    for tool in ("redis-server", "redis-cli", *tools):
        if shutil.which(tool) is None:
            package = "redis-tools" if tool == "redis-cli" else tool
            return f"{tool} not installed (Debian package '{package}')"
    return None


def cli(port: int, *args: str, tls: list[str] | None = None) -> str:
    out = subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", str(port), *(tls or []), *args],
        capture_output=True, timeout=20, text=True,
    )  # fmt: skip
    return out.stdout.strip()


class Process:
    """A redis-server (or redis-sentinel) of these tests, in its own folder."""

    def __init__(self, folder: Path, args: list[str], port: int, program: str = "redis-server"):
        self.folder, self.args, self.port, self.program = folder, args, port, program
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.program, *self.args],
            cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def _wait(check: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not happen within {timeout:g} s")


def _plain(port: int, folder: Path, *extra: str) -> list[str]:
    return ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(folder), *extra]  # fmt: skip


# -- TLS and an ACL user ---------------------------------------------------------------


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 it signs: (ca, cert, key) PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hydra test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@dataclass
class TlsRedis:
    port: int
    ca_file: str

    @property
    def url(self) -> str:
        return f"rediss://{USER}:{PASSWORD}@127.0.0.1:{self.port}/0"


@contextmanager
def tls_redis() -> Iterator[TlsRedis]:
    """redis-server answering TLS only, its default user off and an ACL user allowed the
    proxy's keys alone."""
    folder = Path(tempfile.mkdtemp(prefix="hydra-redis-tls-"))
    ca, cert, key = make_certificates(folder)
    port = free_port()
    server = Process(
        folder,
        [*_plain(0, folder),
            "--tls-port", str(port), "--tls-cert-file", str(cert), "--tls-key-file", str(key),
            "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no",
            "--user", "default", "off",
            "--user", USER, "on", f">{PASSWORD}", "~hydra:*", "+@all",
        ],
        port,
    )  # fmt: skip
    server.start()
    tls = ["--tls", "--cacert", str(ca), "--user", USER, "--pass", PASSWORD]
    try:
        _wait(lambda: cli(port, "PING", tls=tls) == "PONG", "TLS redis-server answering")
        yield TlsRedis(port, str(ca))
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


# -- Sentinel ---------------------------------------------------------------------------


@dataclass
class SentinelSet:
    servers: list[Process]
    sentinel: Process
    folder: Path
    password: str | None = None

    def _sentinel(self, *args: str) -> str:
        auth = ["--pass", self.password, "--no-auth-warning"] if self.password else []
        return cli(self.sentinel.port, *auth, *args)

    @property
    def sentinels(self) -> list[str]:
        return [f"127.0.0.1:{self.sentinel.port}"]

    def primary_port(self) -> int:
        got = self._sentinel("SENTINEL", "get-master-addr-by-name", SERVICE)
        return int(got.split()[-1])

    def flush(self, port: int) -> None:
        """The server on `port` loses every key (as one restarted without its data)."""
        assert cli(port, "FLUSHALL") == "OK"

    def kill_primary(self) -> int:
        """Kill the primary's process; the port of the replica Sentinel promotes."""
        old = self.primary_port()
        next(s for s in self.servers if s.port == old).stop()
        _wait(lambda: self.primary_port() != old, "the Sentinel failover", 30)
        new = self.primary_port()
        _wait(lambda: "role:master" in cli(new, "INFO", "replication"), "the promotion")
        return new


@contextmanager
def sentinel_set(password: str | None = None) -> Iterator[SentinelSet]:
    """A primary and its replica (no persistence), one Sentinel watching them (quorum 1,
    a primary down after 500 ms is failed over), asking `password` of its clients."""
    folder = Path(tempfile.mkdtemp(prefix="hydra-sentinel-"))
    primary_port, replica_port, sentinel_port = free_port(), free_port(), free_port()
    primary = Process(folder, _plain(primary_port, folder), primary_port)
    replica_dir = folder / "replica"
    replica_dir.mkdir()
    replica = Process(
        replica_dir,
        _plain(replica_port, replica_dir, "--replicaof", "127.0.0.1", str(primary_port)),
        replica_port,
    )
    conf = folder / "sentinel.conf"
    conf.write_text(
        f"port {sentinel_port}\nbind 127.0.0.1\ndir {folder}\n"
        f"sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 1\n"
        f"sentinel down-after-milliseconds {SERVICE} 500\n"
        f"sentinel failover-timeout {SERVICE} 5000\n"
        f"sentinel parallel-syncs {SERVICE} 1\n" + (f"requirepass {password}\n" if password else "")
    )
    sentinel = Process(folder, [str(conf), "--sentinel"], sentinel_port, "redis-server")
    with ExitStack() as stack:
        for process in (primary, replica, sentinel):
            process.start()
            stack.callback(process.stop)
        stack.callback(shutil.rmtree, folder, True)
        _wait(
            lambda: "master_link_status:up" in cli(replica_port, "INFO", "replication"),
            "the replica's sync",
        )
        found = SentinelSet([primary, replica], sentinel, folder, password)
        _wait(
            lambda: found._sentinel("SENTINEL", "replicas", SERVICE).count("ip") >= 1,
            "the Sentinel finding the replica",
        )
        yield found


# -- Redis Cluster ----------------------------------------------------------------------


@dataclass
class RedisCluster:
    ports: list[int]
    nodes: list[Process] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def kill(self, port: int) -> None:
        next(n for n in self.nodes if n.port == port).stop()


@contextmanager
def redis_cluster(replicas: int = 0) -> Iterator[RedisCluster]:
    """Three primaries on loopback (each with `replicas` replicas), the slots spread by
    redis-cli."""
    folder = Path(tempfile.mkdtemp(prefix="hydra-cluster-"))
    ports = [free_port() for _ in range(3 * (1 + replicas))]
    found = RedisCluster(ports)
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, True)
        for port in ports:
            node_dir = folder / str(port)
            node_dir.mkdir()
            node = Process(
                node_dir,
                _plain(port, node_dir, "--cluster-enabled", "yes",
                       "--cluster-config-file", "nodes.conf",
                       "--cluster-port", str(free_port()),
                       "--cluster-node-timeout", "2000"),
                port,
            )  # fmt: skip
            node.start()
            stack.callback(node.stop)
            found.nodes.append(node)
        for port in ports:
            _wait(lambda p=port: cli(p, "PING") == "PONG", "a cluster node answering")
        create = subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
             "--cluster-replicas", str(replicas), "--cluster-yes"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if create.returncode != 0:
            raise RuntimeError(create.stdout + create.stderr)
        for port in ports:
            _wait(
                lambda p=port: "cluster_state:ok" in cli(p, "CLUSTER", "INFO"),
                "the cluster's state ok",
            )
        if replicas:  # each replica synced: only a replica with the data takes over
            _wait(
                lambda: sum(
                    "master_link_status:up" in cli(p, "INFO", "replication") for p in ports
                ) == 3 * replicas,
                "every replica synced",
            )  # fmt: skip
        yield found
