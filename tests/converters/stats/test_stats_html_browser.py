"""The ``stats --html`` page in a real headless browser (Debian's Chromium).

The page holds no script, so "no console error" means: the DOM Chromium parsed holds the
banner and every chart as SVG elements, and Chromium's log has no console or uncaught
error line.  The screenshot is kept under the test's tmp path and copied to
``build/test-artifacts/`` (listed at the end of the pytest run) for a human to look at.

Chromium is a test dependency like Java: absent, the test fails saying how to install it
(``.ci/run`` installs it), never skips.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_run import run
from golden_data import golden_set

ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "build" / "test-artifacts"
G = golden_set("collisions")
GEOM = ["--hash-slot-num", str(G.hash_slot_num), "--index-num", str(G.index_num)]

#: What Chromium logs for a page's console messages and uncaught exceptions.
CONSOLE_ERROR = re.compile(r"CONSOLE|Uncaught|console\.error", re.IGNORECASE)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "chromium not found: install it with `apt-get install -y chromium` (Debian; "
        ".ci/run does this) to run the browser test",
        pytrace=False,
    )


def _browse(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"  # its own profile: parallel runs never share one
    return subprocess.run(
        [
            _chromium(),
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_report_renders_in_chromium_without_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    status, _, _ = run(capsys, "stats", str(G.store_dir), "--html", str(page), *GEOM)
    assert status == 0
    dom = _browse(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'id="health"' in dom.stdout and "<b>healthy</b>" in dom.stdout
    assert dom.stdout.count("<svg") == 6 and dom.stdout.count("</svg>") == 6
    assert "<script" not in dom.stdout
    shot = tmp_path / "report.png"
    screen = _browse(tmp_path, "--window-size=1000,3000", f"--screenshot={shot}", page.as_uri())
    assert screen.returncode == 0, screen.stderr[-2000:]
    for log in (dom.stderr, screen.stderr):
        errors = [line for line in log.splitlines() if CONSOLE_ERROR.search(line)]
        assert not errors, errors
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # a page, not a blank
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, ARTIFACTS / "stats-report.png")
    shutil.copyfile(page, ARTIFACTS / "stats-report.html")
