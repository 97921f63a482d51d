"""The dashboard in a real browser (Debian's headless Chromium through Playwright) against
`vmbisect serve` running as a process of its own on a real SQLite store while a queue worker
process (the real worker, engine, git and slot leases; fake build and measurement ports, each
run slowed to 0.25 s, 1 s in the second) runs two queued bisections: the page loads, the
running campaign's boots and state move without a reload, the queue, the worker and its leased
slot show, a commit subject made of markup stays text and opens no dialog, the report opens (in
its sandboxed frame and on its own); without --allow-control there is no control, with it a
wrong token is refused and the right one cancels the second campaign, which its worker
stops.
VMBISECT_DASHBOARD_SHOTS=DIR keeps the screenshots (docs/img)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.queue.state import submit
from orchestrator.store import Store
from tests.conftest import require
from tests.integration.dashboard import XSS_SUBJECT, history, spec, worker
from tests.queueharness import lab_file

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
RUN_SECONDS = 0.25  # the first campaign still runs when the page reaches it (at 0.12 s it ended first once in three runs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(url: str, env: dict[str, str], *flags: str) -> Iterator[tuple[str, list[str]]]:
    """`vmbisect serve` in a process of its own: its base URL and the lines it printed at start."""
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "serve", "--store", url, "--listen",
                             f"127.0.0.1:{_free_port()}", *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2 if flags else 1)]
        assert lines[0].startswith("vmbisect serve: http://"), (lines, proc.stderr and proc.stderr.read())
        yield lines[0].split()[2].rstrip("/"), lines
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _shoot(page, tmp: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    png = tmp / f"{name}.png"
    page.screenshot(path=str(png), full_page=True)
    keep = os.environ.get("VMBISECT_DASHBOARD_SHOTS")
    if keep:
        shutil.copy(png, Path(keep) / png.name)


def test_the_dashboard_follows_a_queue_worker_in_a_real_browser(tmp_path, monkeypatch):
    require(Path(CHROMIUM).exists(), "Debian's chromium is not installed (make setup installs it)")
    from playwright.sync_api import expect, sync_playwright

    data = tmp_path / "data"
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(data))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    url = f"sqlite:///{tmp_path / 'v.db'}"
    store = Store(url)
    repo, culprit = history(tmp_path / "repo")
    first = spec(repo)
    cid = submit(store, "nightly <i>fio</i>", first.KIND, first.to_dict(), 5)
    second = spec(history(tmp_path / "repo2")[0], "second")
    other = submit(store, "second", second.KIND, second.to_dict(), 0)
    lab = lab_file(tmp_path / "lab.yaml", slots=2)
    with serving(url, env) as (base, _lines):
        run = multiprocessing.get_context("fork").Process(
            target=worker, args=(url, lab, tmp_path / "watch", data, {"nightly-fio": RUN_SECONDS, "second": 1.0}))
        run.start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                dialogs: list[str] = []
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

                page.goto(base + "/")
                row = page.locator(f"#campaign-{cid}")
                expect(row.locator("td").nth(1)).to_have_text("nightly <i>fio</i>")
                page.evaluate("window.stillHere = true")
                expect(row.locator(".state")).to_have_text("running", timeout=15000)
                before = int(row.locator(".boots").inner_text())
                page.wait_for_function(f"() => +document.querySelector('#campaign-{cid} .boots').textContent > {before}",
                                       timeout=15000)
                expect(page.locator("table.queue tr", has_text="second").locator(".state")).to_have_text("queued")
                expect(page.locator("table.workers tr.alive")).to_have_count(1)
                expect(page.locator("table.slots tr.busy", has_text=f"{cid}")).to_have_count(1)
                assert page.evaluate("window.stillHere") is True, "the numbers moved without a reload"
                _shoot(page, tmp_path, "dashboard")

                page.goto(f"{base}/campaigns/{cid}")
                expect(page.get_by_text(XSS_SUBJECT).first).to_be_visible(timeout=15000)
                assert page.locator("script").count() == 1, "only the dashboard's own script"
                assert page.locator("form").count() == 0, "no control without --allow-control"
                page.evaluate("window.stillHere = true")
                expect(page.locator("#steps")).not_to_have_text("0", timeout=20000)
                expect(page.frame_locator("iframe.report").get_by_text("written when the campaign ends")).to_be_visible()
                expect(page.locator(".progress .state")).to_have_text("done", timeout=40000)
                assert page.evaluate("window.stillHere") is True

                report = page.frame_locator("iframe.report")
                expect(report.locator("svg").first).to_be_visible(timeout=10000)
                page.set_viewport_size({"width": 1400, "height": 2200})  # a frame below the viewport is not drawn
                page.wait_for_timeout(2500)  # the worker's last writes after "done" reload the frame once more
                expect(report.locator("svg").first).to_be_visible(timeout=10000)
                _shoot(page, tmp_path, "dashboard-campaign")
                with page.context.expect_page() as opened:
                    page.get_by_text("open on its own").click()
                alone = opened.value
                alone.wait_for_load_state()
                expect(alone.locator("svg").first).to_be_visible()
                assert culprit[:12] in alone.content()
                refused = page.request.post(f"{base}/campaigns/{other}/cancel", form={"token": "guess"})
                assert refused.status == 403 and "read-only" in refused.text()

                with serving(url, env, "--allow-control") as (armed, lines):
                    token = lines[1].split()[-1]
                    page.goto(f"{armed}/campaigns/{other}")
                    assert page.locator("form").count() == 1 and token not in page.content(), "cancel: it cannot be requeued"
                    cancel = page.locator("form").first
                    cancel.locator("input[name=token]").fill("not-" + token)
                    cancel.locator("button").click()
                    expect(page.get_by_role("heading", name="Wrong token")).to_be_visible()
                    assert Store(url).campaign(other).state in ("queued", "running")
                    page.go_back()
                    cancel.locator("input[name=token]").fill(token)
                    cancel.locator("button").click()
                    expect(page.get_by_role("heading", name=f"Campaign {other}: cancel done")).to_be_visible()
                    page.goto(f"{armed}/campaigns/{other}")
                    forms = page.locator("form")
                    assert forms.count() == 1 and forms.first.get_attribute("action").endswith("/requeue"), (
                        "a cancelled campaign offers no cancel, only to queue it again")
                assert Store(url).campaign(other).state == "cancelled"
                assert dialogs == [], "markup in a subject or name ran as script"
                browser.close()
            run.join(timeout=60)
            assert run.exitcode == 0, "the worker ends once the queue is empty"
        finally:
            if run.is_alive():
                run.kill()
            run.join()
