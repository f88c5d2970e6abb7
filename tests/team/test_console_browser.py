"""The console in a real browser (Debian's Chromium and chromium-driver, driven by
Selenium, headless at 1280x900): the admin signs in, adds a member with a budget and a spend
alert (the secret shown once, then gone from the page), sees the alert's webhook arrive,
changes the budget, rotates and revokes keys, sets a team's limits; a member sees only
their own page; every control has a label and the keyboard reaches every action; nothing
is wider than the window. Screenshots are kept as test artifacts (tests/artifacts/console,
or $HYDRA_TEST_ARTIFACTS/console)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.record import UsageRecord
from support.servers import ProxyServer
from support.team_keys import ADMIN_KEY, call, create, ledger_rows, messages, proxy, turn
from support.webhook_receiver import Receiver

webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium not installed (extra 'test')"
)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webelement import WebElement  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="chromium or chromium-driver not installed (Debian packages 'chromium', "
    "'chromium-driver')",
)
ARTIFACTS = (
    Path(os.environ.get("HYDRA_TEST_ARTIFACTS", Path(__file__).parent.parent / "artifacts"))
    / "console"
)
WIDTH, HEIGHT = 1280, 900
AGENTS = ("researcher", "tester")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--window-size={WIDTH},{HEIGHT}",
    ):
        options.add_argument(flag)  # fmt: skip
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=DRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_window_size(WIDTH, HEIGHT)
    try:
        yield driver
        # No script error, nothing the page's Content-Security-Policy refused.
        errors = [e for e in driver.get_log("browser") if e["source"] in ("javascript", "security")]
        assert errors == []
    finally:
        driver.quit()


@pytest.fixture
def team(mock: MockServer, tmp_path: Path) -> Iterator[tuple[ProxyServer, str, dict[str, str]]]:
    """A proxy where alice (team core, $5 a month) and bob made requests (one of bob's
    refused), some of alice's by two of her agents; yields (the proxy, the ledger, the
    secrets by name)."""
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    secrets = {
        "alice": create(ledger, "alice", team="core", budget=5, rpm=60),
        "bob": create(ledger, "bob", team="ops", models="priced-*"),
    }
    with proxy(mock, ledger, tmp_path, HYDRA_ALERTS_BACKOFF="0.05") as server:
        mock.script([turn(5, 10), turn(7, 3), turn(5, 10)])
        for name in ("alice", "bob", "alice"):
            assert (
                call(server.port, "POST", "/v1/messages", messages(), secrets[name]).status == 200
            )
        refused = call(server.port, "POST", "/v1/messages", messages("cheap-x"), secrets["bob"])
        assert refused.status == 403  # a model bob may not use
        ledger_rows(ledger, "alice", 2)
        ledger_rows(ledger, "bob", 2)
        # What the proxy records of a session's agents: alice's teammates.
        writer = open_ledger(ledger)
        now = time.time()
        for i, agent in enumerate(AGENTS * 2):
            writer.record(UsageRecord(now - 60 + i, f"req_agent{i}", "anthropic", "priced",
                                      "a", "priced-x", "priced-a", 100 * (i + 1), 50,
                                      cost_usd=0.1 * (i + 1), key_name="alice", team="core",
                                      agent=agent))  # fmt: skip
        writer.close()
        yield server, ledger, secrets


def wait(driver: Any, until: Callable[[Any], Any], timeout: float = 15) -> Any:
    return WebDriverWait(driver, timeout).until(until)


def loaded(driver: Any) -> None:
    """Wait for the page's next data load."""
    driver.execute_script("document.body.dataset.loaded = ''")
    wait(
        driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true"
    )


def shot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def sign_in(driver: Any, base: str, key: str) -> None:
    driver.get(base + "/dashboard")
    box = wait(driver, lambda d: d.find_element(By.ID, "sign-in-key"))
    wait(driver, lambda d: box.is_displayed())
    box.send_keys(key)
    driver.execute_script("document.body.dataset.loaded = ''")
    box.send_keys(Keys.ENTER)
    wait(
        driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true"
    )


def by_label(driver: Any, aria: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'button[aria-label="{aria}"]')


def member_row(driver: Any, name: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'#members tr[data-key="{name}"]')


def fill(driver: Any, values: dict[str, str]) -> None:
    for field, value in values.items():
        box = driver.find_element(By.ID, field)
        if box.tag_name == "select":
            Select(box).select_by_value(value)
        else:
            box.clear()
            box.send_keys(value)


def confirm(driver: Any) -> None:
    wait(
        driver, lambda d: d.find_element(By.ID, "confirm-dialog").get_attribute("open") is not None
    )
    driver.execute_script("document.body.dataset.loaded = ''")
    driver.find_element(By.ID, "confirm-yes").click()
    wait(
        driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true"
    )


def take_secret(driver: Any) -> str:
    """The secret the dialog shows once; then "Done": it is gone from the page."""
    dialog = wait(driver, lambda d: d.find_element(By.ID, "secret-dialog"))
    wait(driver, lambda d: dialog.get_attribute("open") is not None)
    secret = str(driver.find_element(By.ID, "secret-value").get_attribute("value"))
    assert secret.startswith("hk-")
    return secret


def hide_secret(driver: Any, secret: str) -> None:
    driver.find_element(By.ID, "secret-done").click()
    wait(driver, lambda d: d.find_element(By.ID, "secret-dialog").get_attribute("open") is None)
    assert driver.find_element(By.ID, "secret-value").get_attribute("value") == ""
    assert secret not in driver.page_source
    assert not driver.execute_script(
        "return [...document.querySelectorAll('input')].some(i => i.value.startsWith('hk-'))"
    )


def fits(driver: Any) -> None:
    """Nothing wider than the window: no sideways scrolling, every table inside it."""
    width = driver.execute_script("return document.documentElement.clientWidth")
    assert driver.execute_script("return document.documentElement.scrollWidth") <= width
    for table in driver.find_elements(By.CSS_SELECTOR, "table"):
        if table.is_displayed():
            right = driver.execute_script(
                "return arguments[0].getBoundingClientRect().right", table
            )
            assert right <= width, table.get_attribute("id")


def test_admin_adds_caps_alerts_rotates_and_revokes(
    browser: Any, mock: MockServer, team: tuple[ProxyServer, str, dict[str, str]]
) -> None:
    server, ledger, secrets = team
    base = server.url
    with Receiver() as receiver:
        sign_in(browser, base, ADMIN_KEY)
        # The admin key is gone from the page; the session cookie is out of scripts' reach.
        assert browser.find_element(By.ID, "sign-in-key").get_attribute("value") == ""
        assert ADMIN_KEY not in browser.page_source
        cookie = browser.get_cookie("hydra_console")
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert "hydra_console" not in browser.execute_script("return document.cookie")
        assert browser.find_element(By.ID, "who").text == "Signed in as the admin"
        # Two requests of $0.25 and her agents' four ($0.10 to $0.40).
        assert "$1.50 of $5.00" in member_row(browser, "alice").text
        assert "1 refused" in member_row(browser, "bob").text
        fits(browser)
        shot(browser, "admin-overview")

        # Add carol: team core, $4.00 a month, rpm 30, an alert at 10 % and 30 %.
        browser.find_element(By.ID, "add-member").click()
        fill(browser, {"m-name": "carol", "m-team": "core", "m-budget": "4", "m-rpm": "30",
                       "m-models": "priced-*", "m-thresholds": "10,30",
                       "m-webhook": receiver.url("/hook/carol")})  # fmt: skip
        shot(browser, "admin-add-member")
        browser.execute_script("document.body.dataset.loaded = ''")
        browser.find_element(By.ID, "member-save").click()
        carol = take_secret(browser)
        shot(browser, "admin-secret-shown-once")
        hide_secret(browser, carol)
        wait(
            browser,
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        )
        listed = call(server.port, "GET", "/admin/keys/carol", key=ADMIN_KEY).json()
        assert (listed["team"], listed["budget_usd"], listed["rpm"], listed["models"]) == (
            "core", 4.0, 30, ["priced-*"])  # fmt: skip
        assert listed["alert"] == {"thresholds": [10, 30], "webhook": "http://127.0.0.1/…",
                                   "format": "json"}  # fmt: skip

        # carol spends $0.50 (12.5 %): the 10 % alert arrives, once.
        server_port = server.port
        time.sleep(0.3)  # the worker's keys are reloaded after the store's version moved
        mock.script([turn(5, 10), turn(5, 10)])
        for _ in range(2):
            call_ok = call(server_port, "POST", "/v1/messages", messages(), carol)
            assert call_ok.status == 200, call_ok.body
        got = receiver.wait_for(1)
        time.sleep(0.5)
        assert [b["threshold_percent"] for b in receiver.bodies()] == [10], got
        assert got[0]["subject"] == {"kind": "key", "name": "carol", "team": "core"}
        assert got[0]["budget_usd"] == 4.0 and got[0]["spent_usd"] == pytest.approx(0.5)
        ledger_rows(ledger, "carol", 2)

        # Cap carol's budget at $2.00.
        loaded_now = lambda: browser.execute_script("document.body.dataset.loaded = ''")  # noqa: E731
        by_label(browser, "Edit carol").click()
        wait(
            browser,
            lambda d: d.find_element(By.ID, "member-dialog").get_attribute("open") is not None,
        )
        assert browser.find_element(By.ID, "m-budget").get_attribute("value") == "4"
        assert browser.find_element(By.ID, "m-webhook").get_attribute("placeholder") == (
            "kept: http://127.0.0.1/…"
        )
        fill(browser, {"m-budget": "2"})
        shot(browser, "admin-edit-member")
        loaded_now()
        browser.find_element(By.ID, "member-save").click()
        wait(
            browser,
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        )
        after = call(server.port, "GET", "/admin/keys/carol", key=ADMIN_KEY).json()
        assert after["budget_usd"] == 2.0 and after["alert"]["thresholds"] == [10, 30]
        wait(browser, lambda d: "$0.50 of $2.00" in member_row(d, "carol").text)

        # Rotate carol: a new secret, shown once; the old one works through its grace.
        by_label(browser, "Rotate the secret of carol").click()
        confirm(browser)
        rotated = take_secret(browser)
        assert rotated != carol
        shot(browser, "admin-rotated")
        hide_secret(browser, rotated)
        time.sleep(0.3)
        assert call(server.port, "GET", "/v1/models", key=rotated).status == 200
        assert call(server.port, "GET", "/v1/models", key=carol).status == 200

        # Revoke bob: refused from his next request on.
        by_label(browser, "Revoke bob").click()
        confirm(browser)
        assert "revoked" in member_row(browser, "bob").text
        assert browser.find_elements(By.CSS_SELECTOR, 'button[aria-label="Revoke bob"]') == []
        time.sleep(0.3)
        assert call(server.port, "GET", "/v1/models", key=secrets["bob"]).status == 401

        # The team's limits and an alert of its own.
        browser.find_element(By.ID, "set-team").click()
        fill(browser, {"t-name": "core", "t-budget": "50", "t-period": "week",
                       "t-thresholds": "80", "t-webhook": receiver.url("/hook/core"),
                       "t-format": "slack"})  # fmt: skip
        loaded_now()
        browser.find_element(By.ID, "team-save").click()
        wait(
            browser,
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        )
        teams = call(server.port, "GET", "/admin/keys", key=ADMIN_KEY).json()["teams"]
        assert [(t["name"], t["budget_usd"], t["period"], t["alert"]["format"]) for t in teams] == [
            ("core", 50.0, "week", "slack")]  # fmt: skip
        wait(browser, lambda d: "core" in d.find_element(By.ID, "teams").text)

        browser.execute_script("document.getElementById('usage-title').scrollIntoView()")
        days = browser.find_elements(By.CSS_SELECTOR, "#chart-cost-day rect.bar")
        assert {d.get_attribute("data-part") for d in days} == {"alice", "bob", "carol"}
        shot(browser, "admin-charts")

        # The latest requests, filtered: bob's refusal by its cause.
        loaded_now()
        Select(browser.find_element(By.ID, "filter-member")).select_by_value("bob")
        wait(
            browser,
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        )
        loaded_now()
        Select(browser.find_element(By.ID, "filter-status")).select_by_value("refused")
        wait(
            browser,
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        )
        rows = browser.find_elements(By.CSS_SELECTOR, "#latest tbody tr")
        assert len(rows) == 1 and "refused" in rows[0].text and "bob" in rows[0].text
        browser.execute_script("document.getElementById('latest-section').scrollIntoView()")
        fits(browser)
        shot(browser, "admin-latest-filtered")

        # Who changed what: every change above, by the console, newest first.
        entries = call(server.port, "GET", "/admin/audit", key=ADMIN_KEY).json()["entries"]
        assert [(e["action"], e["subject"]) for e in entries] == [
            ("alert.set", "team:core"), ("team.set", "team:core"), ("key.revoke", "key:bob"),
            ("key.rotate", "key:carol"), ("key.set", "key:carol"), ("alert.set", "key:carol"),
            ("key.create", "key:carol"), ("key.create", "key:bob"), ("key.create", "key:alice"),
        ]  # fmt: skip
        assert {e["actor"] for e in entries[:7]} == {"admin-key (console)"}
        browser.execute_script("document.getElementById('audit-section').scrollIntoView()")
        shot(browser, "admin-audit")
        rows = browser.find_elements(By.CSS_SELECTOR, "#audit tbody tr")
        assert [r.get_attribute("data-action") for r in rows] == [e["action"] for e in entries]
        assert "admin-key (console)" in rows[0].text
        assert "budget_usd: 4 → 2" in rows[4].text  # the change, field by field
        log = server.log_text()
    assert ADMIN_KEY not in log and carol not in log and rotated not in log
    assert "/hook/carol" not in log


def test_member_sees_only_their_own_page(
    browser: Any, team: tuple[ProxyServer, str, dict[str, str]]
) -> None:
    server, _, secrets = team
    sign_in(browser, server.url, secrets["alice"])
    assert browser.find_element(By.ID, "who").text == "Signed in as alice (team core)"
    assert browser.find_element(By.ID, "member-title").text == "Your usage, alice (team core)"
    facts = browser.find_element(By.ID, "member-limits").text
    spent = 0.5 + sum(0.1 * (i + 1) for i in range(len(AGENTS) * 2))
    assert f"${spent:.2f} of $5.00" in facts
    assert f"left this period\n${5 - spent:.2f}" in facts
    assert "requests per minute\n60" in facts
    for hidden in ("members-section", "teams-section", "audit-section"):
        assert not browser.find_element(By.ID, hidden).is_displayed()
    members = {
        r.text.split()[2] for r in browser.find_elements(By.CSS_SELECTOR, "#latest tbody tr")
    }
    assert members == {"alice"}
    # Her agents, each its own bar part in the chart and its own row.
    parts = {
        b.get_attribute("data-part")
        for b in browser.find_elements(By.CSS_SELECTOR, "#chart-cost-agent rect.bar")
    }
    assert parts == {"lead", *AGENTS}
    legend = [i.text for i in browser.find_elements(By.CSS_SELECTOR, "#legend-cost-agent .item")]
    assert legend == ["lead", *sorted(AGENTS)]
    agents = [
        r.get_attribute("data-key")
        for r in browser.find_elements(By.CSS_SELECTOR, "#by-agent tbody tr")
    ]
    assert sorted(agents) == sorted(["alice / lead", *(f"alice / {a}" for a in AGENTS)])
    fits(browser)
    shot(browser, "member-page")
    browser.find_element(By.ID, "sign-out").click()
    wait(browser, lambda d: d.find_element(By.ID, "sign-in").is_displayed())
    assert browser.get_cookie("hydra_console") is None
    assert browser.find_elements(By.CSS_SELECTOR, "#latest tbody tr") == []


def test_labels_and_keyboard(browser: Any, team: tuple[ProxyServer, str, dict[str, str]]) -> None:
    server, _, _ = team
    sign_in(browser, server.url, ADMIN_KEY)
    unlabelled = browser.execute_script(
        """
        const named = e => (e.labels && e.labels.length) || e.getAttribute('aria-label')
            || e.getAttribute('aria-labelledby');
        const out = [];
        for (const e of document.querySelectorAll('input, select, textarea')) {
          if (!named(e)) out.push(e.id || e.outerHTML.slice(0, 80));
        }
        for (const b of document.querySelectorAll('button')) {
          if (!(b.getAttribute('aria-label') || b.textContent.trim())) out.push(b.outerHTML.slice(0, 80));
        }
        for (const s of document.querySelectorAll('svg.chart')) {
          if (!s.getAttribute('aria-labelledby')) out.push(s.id);
        }
        return out;
        """
    )
    assert unlabelled == []
    # Tab from the top: every visible action and control of the page is reached, in order.
    wanted = browser.execute_script(
        """
        return [...document.querySelectorAll('button, select, input')]
          .filter(e => e.offsetParent !== null && !e.closest('dialog') && !e.disabled)
          .map(e => e.id || e.getAttribute('aria-label'));
        """
    )
    assert {"sign-out", "since", "add-member", "set-team", "filter-member", "Rotate the secret of alice",
            "Revoke bob", "Edit alice"} <= set(wanted)  # fmt: skip
    browser.find_element(By.TAG_NAME, "h1").click()  # the keyboard starts at the top
    reached = []
    for _ in range(len(wanted) + 5):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        active = browser.switch_to.active_element
        reached.append(active.get_attribute("id") or active.get_attribute("aria-label"))
    assert [r for r in reached if r in wanted][: len(wanted)] == wanted
    # The keyboard alone: open "Add a member", type, close with Escape; focus comes back.
    add = browser.find_element(By.ID, "add-member")
    browser.execute_script("arguments[0].focus()", add)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    dialog = browser.find_element(By.ID, "member-dialog")
    wait(browser, lambda d: dialog.get_attribute("open") is not None)
    assert browser.switch_to.active_element.get_attribute("id") == "m-name"
    browser.switch_to.active_element.send_keys("dave", Keys.TAB, "core")
    assert browser.find_element(By.ID, "m-team").get_attribute("value") == "core"
    shot(browser, "keyboard-add-member")
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait(browser, lambda d: dialog.get_attribute("open") is None)
    assert browser.switch_to.active_element.get_attribute("id") == "add-member"
