"""The Helm chart (deploy/helm/hydra-proxy): `helm lint --strict` passes, every rendering
of it (the defaults, and an ingress with Sentinel, a private Redis CA, an existing Secret
and no autoscaler) is valid against Kubernetes's strict schemas (kubeconform, which
rejects a misspelt field), and the pod it describes, run here with a real Redis, serves
its readiness path and drains on SIGTERM within the grace the Deployment gives it."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock.server import free_port

yaml = pytest.importorskip("yaml", reason="PyYAML not installed (extra 'test')")

ROOT = Path(__file__).resolve().parent.parent.parent
CHART = ROOT / "deploy" / "helm" / "hydra-proxy"
TOOLS = ROOT / ".e2e" / "go" / "bin"
SCHEMAS = ROOT / ".e2e" / "k8s-schemas"
KINDS = [
    "deployment-apps-v1", "service-v1", "secret-v1", "configmap-v1",
    "horizontalpodautoscaler-autoscaling-v2", "poddisruptionbudget-policy-v1",
    "ingress-networking-v1",
]  # fmt: skip
SIGNING = ["--set", "secrets.signingKey=0123456789abcdef0123456789abcdef"]
RENDERINGS = {
    "defaults": [*SIGNING, "--set", "secrets.redisUrl=redis://redis:6379/0"],
    "ingress, sentinel, CA, existing secret": [
        "--set", "secrets.existingSecret=hydra-secrets",
        "--set", "ingress.enabled=true",
        "--set", "autoscaling.enabled=false",
        "--set", "sentinel.hosts={sentinel-0:26379,sentinel-1:26379}",
        "--set", "sentinel.service=mymaster",
        "--set", "redisCa.secretName=redis-ca",
        "--set", "providerKeys.OPENAI_API_KEY=openai-api-key",
        "--set", "service.sessionAffinity=ClientIP",
    ],
}  # fmt: skip


def tool(name: str) -> str | None:
    built = TOOLS / name
    return str(built) if built.exists() else shutil.which(name)


_missing = [
    f"{name} not built (bash tests/run builds it into .e2e/go/bin)"
    for name in ("helm", "kubeconform")
    if tool(name) is None
]
try:
    import kubernetes_validate  # noqa: F401
except ImportError:
    _missing.append("kubernetes-validate not installed (extra 'test': the schemas)")
pytestmark = pytest.mark.skipif(bool(_missing), reason="; ".join(_missing))


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool("helm")), *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HELM_CACHE_HOME": str(ROOT / ".e2e" / "helm"),
             "HELM_CONFIG_HOME": str(ROOT / ".e2e" / "helm"),
             "HELM_DATA_HOME": str(ROOT / ".e2e" / "helm")},
    )  # fmt: skip


def render(values: list[str]) -> str:
    done = helm("template", "hydra", str(CHART), "--kube-version", "1.37.0", *values)
    assert done.returncode == 0, done.stderr
    return done.stdout


def documents(text: str) -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(text) if d}


def kubeconform(manifest: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    from support.k8s_schemas import standalone

    folder = standalone(KINDS, SCHEMAS)
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    return subprocess.run(
        [str(tool("kubeconform")), "-strict", "-summary",
         "-schema-location", f"{folder}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
         str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_chart_lints_strict_and_will_not_render_without_a_shared_signing_key() -> None:
    linted = helm("lint", "--strict", str(CHART), *SIGNING)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    refused = helm("template", "hydra", str(CHART), "--kube-version", "1.37.0")
    assert refused.returncode != 0
    assert "secrets.signingKey (or secrets.existingSecret) is required" in refused.stderr


@pytest.mark.parametrize("name", list(RENDERINGS))
def test_every_rendering_is_valid_against_the_strict_kubernetes_schemas(
    name: str, tmp_path: Path
) -> None:
    manifest = render(RENDERINGS[name])
    checked = kubeconform(manifest, tmp_path)
    kinds = documents(manifest)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"Valid: {len(kinds)}, Invalid: 0, Errors: 0, Skipped: 0" in checked.stdout
    # The schemas bite: a misspelt field of the same manifest is refused.
    broken = kubeconform(manifest.replace("readinessProbe:", "readinessProbes:"), tmp_path)
    assert broken.returncode != 0 and "readinessProbes" in broken.stdout


def test_the_pieces_a_fleet_needs_are_wired_together() -> None:
    from hydra_proxy.server.pipeline.sessions import SESSION_HEADERS

    kinds = documents(render(RENDERINGS["ingress, sentinel, CA, existing secret"]))
    pod = kinds["Deployment"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    # The Redis and PostgreSQL URLs from the Secret, the signing key mounted from it.
    assert env["HYDRA_REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == "hydra-secrets"
    assert env["HYDRA_USAGE_LEDGER"]["valueFrom"]["secretKeyRef"]["key"] == "ledger-url"
    assert env["HYDRA_REDIS_SENTINELS"]["value"] == "sentinel-0:26379,sentinel-1:26379"
    keys = next(v for v in pod["spec"]["volumes"] if v["name"] == "keys")
    assert keys["secret"]["secretName"] == "hydra-secrets"
    assert env["HYDRA_SIGNING_KEY_FILE"]["value"].startswith(
        next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "keys")
    )
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    # The PDB and the Service select the Deployment's pods.
    labels = pod["metadata"]["labels"]
    assert kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == labels
    assert kinds["Service"]["spec"]["selector"] == labels
    # Stickiness: the ingress hashes the header the proxy's fair queue keys sessions by
    # first, as the shipped HAProxy configuration does.
    header = SESSION_HEADERS[0].decode()
    hashed = kinds["Ingress"]["metadata"]["annotations"][
        "nginx.ingress.kubernetes.io/upstream-hash-by"
    ]
    assert hashed == "$http_" + header.replace("-", "_")
    assert f"req.hdr({header})" in (ROOT / "deploy" / "haproxy.cfg").read_text()
    hpa = documents(render(RENDERINGS["defaults"]))["HorizontalPodAutoscaler"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == kinds["Deployment"]["metadata"]["name"]


def test_the_pod_serves_its_readiness_path_and_drains_within_its_grace(tmp_path: Path) -> None:
    """The rendered container's arguments, environment, ConfigMap and Secret, run as the
    pod would (bound to loopback here), on a real Redis."""
    from concurrent.futures import ThreadPoolExecutor

    from hydra_proxy.config import load
    from hydra_proxy.server.transport.run import kill_timeout
    from support.cluster_rig import CountingUpstream, redis_available, redis_server, stream_chat

    if redis_available() is not None:
        pytest.skip(redis_available() or "")
    kinds = documents(render(RENDERINGS["defaults"]))
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    config = tmp_path / "hydra.toml"
    config.write_text(kinds["ConfigMap"]["data"]["hydra.toml"])
    secret = kinds["Secret"]["stringData"]
    (tmp_path / "signing-key").write_text(secret["signing-key"])
    port = free_port()
    args = [
        f"--port={port}" if a.startswith("--port=") else
        "--host=127.0.0.1" if a.startswith("--host=") else a
        for a in container["args"]
    ]  # fmt: skip
    plain = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    with (
        redis_server() as redis,
        CountingUpstream(pieces=40, delay=0.05) as upstream,
        ThreadPoolExecutor(1) as pool,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("HYDRA_")}
        env.update(
            plain,
            HYDRA_CONFIG=str(config),
            HYDRA_SIGNING_KEY_FILE=str(tmp_path / "signing-key"),
            HYDRA_REDIS_URL=redis.url,
            HYDRA_USAGE_LEDGER="off",
            HYDRA_OPENAI_BASE_URL=upstream.url + "/v1",
            OPENAI_API_KEY="sk-upstream",
            HOME=str(tmp_path),
            PYTHONPATH=str(ROOT / "python"),
        )
        settings = load({"config": str(config)}, env)
        # Kubernetes's SIGKILL comes after the proxy's own kill of a busy worker.
        assert pod["terminationGracePeriodSeconds"] > kill_timeout(settings)
        log = (tmp_path / "pod.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "hydra_proxy", *args], env=env,
            stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
        try:
            assert _health(port, 200, 60) == 200
            streaming = pool.submit(stream_chat, port, "in flight at SIGTERM", {})
            deadline = time.monotonic() + 30
            while upstream.active == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            process.send_signal(signal.SIGTERM)
            # Readiness takes the pod out of the Service while its stream runs on (each
            # worker learns of the signal in its own time; a closed listener says it too).
            assert _health(port, 503, 10) in (503, None), (tmp_path / "pod.log").read_text()
            reply = streaming.result(60)
            assert reply["status"] == 200 and reply["complete"], reply
            assert process.wait(pod["terminationGracePeriodSeconds"]) == 0
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
            log.close()


def _health(port: int, want: int, within: float) -> int | None:
    """The readiness path's status once it is `want` (None: the listener is closed), or
    the last one seen when `within` s pass."""
    deadline = time.monotonic() + within
    status: int | None = None
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            status = conn.getresponse().status
            conn.close()
        except OSError:
            status = None
        if status == want or (status is None and want != 200):
            return status
        time.sleep(0.05)
    return status
