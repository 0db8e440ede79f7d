"""The memory browser at ``/ui``, driven in real headless Chromium (Debian's package, through
Playwright) against a real ``memory serve`` on a published data root: sign in with a key,
search and filter, one memory's sources and timeline, edit / pin / forget with immediate
effect, an entity's page, the health plots; and the refusals: no session, a wrong key, a
form without its CSRF token, another namespace's memory, a revoked key.

``UI_SCREENSHOTS=docs/images pytest tests/test_ui.py`` refreshes docs/ui.md's screenshots.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evals.bench.serving import create_key, service_env, start
from retrieval.agent.client import MemoryClient
from tests.conftest import copy_root

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = os.environ.get("UI_SCREENSHOTS")


@pytest.fixture(scope="module")
def served(personal_root, tmp_path_factory):
    root = copy_root(personal_root, tmp_path_factory.mktemp("ui"))
    for job in ("nightly", "monthly"):  # entity profiles, and the health report's plots
        subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "run", job],
                       check=True, capture_output=True, env=service_env())
    keys = {"default": create_key(root, "default"), "bea": create_key(root, "bea")}
    MemoryClient(root, namespace="bea").remember("Bea keeps her climbing shoes in locker 12.")
    server = start(root, keys["default"], workers=1)
    yield f"http://127.0.0.1:{server.port}", keys, root
    server.stop()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: `make debian-packages` installs Debian's package (CI does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


def _signed_in(browser, url: str, key: str):
    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    page.goto(f"{url}/ui/login")
    page.fill("#key", key)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/ui/memories")
    return page


def _shot(page, name: str, tmp_path: Path) -> None:
    target = Path(SHOTS) if SHOTS else tmp_path
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / f"ui-{name}.png"), full_page=True)
    assert (target / f"ui-{name}.png").stat().st_size > 10_000


def test_signing_in_takes_a_valid_key_and_keeps_only_an_http_only_cookie(browser, served, tmp_path):
    url, keys, _ = served
    page = browser.new_context().new_page()
    page.goto(f"{url}/ui/memories")
    assert page.url == f"{url}/ui/login"  # no session: the sign-in form
    _shot(page, "login", tmp_path)
    page.fill("#key", "mem_abcdefabcdef_notakey")
    page.click("button[type=submit]")
    assert "not a valid API key" in page.text_content("[role=alert]")
    page.fill("#key", keys["default"])
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/ui/memories")
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["memory_ui"]
    assert session["httpOnly"] and session["sameSite"] == "Strict" and session["path"] == "/ui"
    assert keys["default"] not in str(cookies)  # the key itself never reaches the browser's storage
    assert page.evaluate("document.cookie") == ""  # nothing a script can read
    page.click("text=Sign out")
    page.wait_for_url(f"{url}/ui/login")
    page.goto(f"{url}/ui/memories")
    assert page.url == f"{url}/ui/login"


def test_search_and_filters_swap_the_results_in_place(browser, served, tmp_path):
    url, keys, _ = served
    page = _signed_in(browser, url, keys["default"])
    assert page.locator("table[data-testid=results] tbody tr").count() > 5
    page.fill("#q", "When is the WRX oil change due?")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*q=When"))
    expect(page.locator("table[data-testid=results] tbody tr").first).to_contain_text("11,799")
    _shot(page, "search", tmp_path)
    page.goto(f"{url}/ui/memories")
    categories = page.locator("select[name=category] option").all_text_contents()[1:]
    assert len(categories) > 1
    page.select_option("select[name=category]", categories[0])
    page.wait_for_url(re.compile(r".*category="))
    cells = page.locator("table[data-testid=results] tbody tr td:nth-child(3)")
    expect(cells.first).to_have_text(categories[0])
    assert {c.strip() for c in cells.all_text_contents()} == {categories[0]}


def test_a_memory_shows_its_sources_and_timeline_and_edits_take_effect_at_once(browser, served, tmp_path):
    url, keys, root = served
    page = _signed_in(browser, url, keys["default"])
    page.fill("#q", "tires rotated every 6,000 miles")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*q=tires"))
    page.locator("table[data-testid=results] tbody tr td a").first.click()
    page.wait_for_url(re.compile(r".*/ui/memories/"))
    assert "rotate" in page.text_content("[data-testid=sources]").lower()  # the turn it was read from
    assert "stored" in page.text_content("[data-testid=timeline]")
    _shot(page, "item", tmp_path)
    before = page.text_content("[data-testid=content]")
    page.fill("#content", "The tires get rotated every 5,000 miles now.")
    page.click("form.edit button")
    page.wait_for_url(re.compile(r".*done=update"))
    assert page.text_content("[data-testid=content]") == "The tires get rotated every 5,000 miles now."
    assert "reworded" in page.text_content("[data-testid=timeline]")
    reader = MemoryClient(root)
    assert "5,000 miles now" in reader.inject("How often do the tires get rotated?", record=False).text
    page.click("form.inline button:has-text('Pin')")
    page.wait_for_url(re.compile(r".*done=pin"))
    assert "Pinned" in page.text_content("[role=status]")
    page.click("button:has-text('Forget')")
    page.wait_for_url(re.compile(r".*done=forget"))
    assert page.text_content("[data-testid=status]") == "purged"
    assert before not in reader.inject("How often do the tires get rotated?", record=False).text
    assert "5,000 miles now" not in reader.inject("How often do the tires get rotated?", record=False).text


def test_an_entity_page_shows_its_profile_and_neighbours(browser, served, tmp_path):
    url, keys, _ = served
    page = _signed_in(browser, url, keys["default"])
    page.goto(f"{url}/ui/entities/Maya")
    assert "Maya" in page.text_content("[data-testid=profile]"), page.content()[:2000]
    assert page.locator("[data-testid=profile] li").count() >= 1
    assert "Aaron" in page.locator("[data-testid=neighbours] a").all_text_contents()
    assert page.locator("[data-testid=mentions] li a").count() >= 1
    page.click("[data-testid=neighbours] a:has-text('Aaron')")  # one entity to the next
    page.wait_for_url(re.compile(r".*/ui/entities/Aaron"))
    assert page.locator("[data-testid=profile] li").count() >= 5
    _shot(page, "entity", tmp_path)
    page.goto(f"{url}/ui/entities/Nobody%20Atall")
    assert "knows nothing" in page.text_content("main")


def test_the_health_page_shows_the_reports_plots(browser, served, tmp_path):
    url, keys, _ = served
    page = _signed_in(browser, url, keys["default"])
    page.goto(f"{url}/ui/health")
    images = page.locator(".plots img")
    assert images.count() >= 3
    assert all(w > 100 for w in images.evaluate_all("els => els.map(e => e.naturalWidth)"))
    assert int(page.locator("[data-testid=counts] td").first.text_content()) > 0
    _shot(page, "health", tmp_path)
    assert page.request.get(f"{url}/ui/health/2026-01-01/../../service/service.sqlite3").status == 404


def test_what_the_browser_refuses(browser, served):
    url, keys, root = served
    page = _signed_in(browser, url, keys["default"])
    item = next(r for r in MemoryClient(root).list() if "Lehi" in r["content"] or "WRX" in r["content"])
    # A form without the session's CSRF token changes nothing.
    answer = page.request.post(f"{url}/ui/memories/{item['id']}/forget", form={"csrf": "forged"})
    assert answer.status == 403
    assert MemoryClient(root).get(item["id"])["status"] == "active"
    # Another namespace: its memory is not there for this key, and naming it is refused.
    bea = _signed_in(browser, url, keys["bea"])
    bea.goto(f"{url}/ui/memories/{item['id']}")
    assert "No memory of yours" in bea.text_content("[role=alert]")
    bea.goto(f"{url}/ui/memories?namespace=default")
    assert "may not read" in bea.text_content("[role=alert]") or "not" in bea.text_content("[role=alert]")
    bea.goto(f"{url}/ui/memories?status=pending")
    assert "locker 12" in bea.text_content("main") and "11,799" not in bea.text_content("main")
    # A memory's words are shown as text, never run as markup.
    MemoryClient(root, namespace="bea").remember("<script>document.title='owned'</script> Bea likes tea.")
    bea.goto(f"{url}/ui/memories?status=pending")
    assert bea.title() != "owned" and "<script>" in bea.text_content("main")
    # A revoked key's session ends with it.
    key_id = keys["bea"].split("_")[1]
    subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "keys", "revoke", key_id],
                   check=True, capture_output=True, env=service_env())
    bea.wait_for_timeout(2500)  # the service reads a key again after 2 s
    bea.goto(f"{url}/ui/memories")
    assert bea.url == f"{url}/ui/login"
