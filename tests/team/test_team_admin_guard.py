"""The admin key's guard, on the proxy process: failed admin authentications are answered
one at a time, ADMIN_FAILURE_DELAY apart, so guessing is impractical, while the worker's
other requests (its health, a right admin key) go on; key and team names are matched
whole (a trailing newline is no name)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.team.manage import KeyChangeError, check_name
from hydra_proxy.team.service import ADMIN_FAILURE_DELAY
from support.servers import ProxyServer
from support.team_keys import ADMIN_KEY, call, proxy


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    directory = tmp_path_factory.mktemp("admin")
    with MockServer() as mock, proxy(mock, f"sqlite:{directory / 'u.sqlite3'}", directory) as p:
        yield p


def test_failed_admin_attempts_pass_one_at_a_time_and_stall_nothing_else(
    server: ProxyServer,
) -> None:
    guesses = 4
    done: list[float] = []
    start = time.monotonic()

    def guess(n: int) -> int:
        status = call(server.port, "GET", "/admin/keys", key=f"wrong-guess-{n:020d}").status
        done.append(time.monotonic())
        return status

    with ThreadPoolExecutor(guesses) as pool:
        statuses = pool.map(guess, range(guesses))
        time.sleep(0.2)  # the guesses are waiting now
        assert call(server.port, "GET", "/health").status == 200
        assert call(server.port, "GET", "/admin/keys", key=ADMIN_KEY).status == 200
        answered_others = time.monotonic()
        assert list(statuses) == [401] * guesses
    # A lower bound, which load can only lengthen: the guesses were answered one after
    # another, each after the delay; the others were answered before the last guess.
    assert max(done) - start >= guesses * ADMIN_FAILURE_DELAY * 0.95
    assert answered_others < max(done)


@pytest.mark.parametrize("name", ["alice\n", "alice\r\n", "bob\nFORGED", "", "-x", "a" * 65])
def test_names_are_matched_whole(server: ProxyServer, name: str) -> None:
    with pytest.raises(KeyChangeError):
        check_name(name)
    reply = call(server.port, "POST", "/admin/keys", {"name": name}, ADMIN_KEY)
    assert reply.status == 400
    listed = call(server.port, "GET", "/admin/keys", key=ADMIN_KEY).json()["keys"]
    assert name not in [k["name"] for k in listed]


def test_a_valid_name_is_created(server: ProxyServer) -> None:
    reply = call(server.port, "POST", "/admin/keys", {"name": "carol.b@team-1"}, ADMIN_KEY)
    assert reply.status == 201 and reply.json()["name"] == "carol.b@team-1"
