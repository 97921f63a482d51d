"""A shipped series (examples/<name>) bisected for real through the CLI, as a user runs it: the
series' repository made on linux-source-6.1, its campaign file pointed at it, `vmbisect bisect`
and `vmbisect report`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

from orchestrator.demo import DemoRepo, Series, ensure_series_repo
from tests.conftest import require

VMBISECT = [sys.executable, "-m", "orchestrator.cli"]


def bisect_shipped(tmp_path: Path, series: Series, campaign_file: Path | None = None,
                   edit: Callable[[dict[str, Any]], None] | None = None) -> tuple[DemoRepo, str, str]:
    """The series' campaign (its campaign.yaml unless `campaign_file`, changed by `edit`) bisected
    to its end with exit code 0; (the series' repository, the store's URL, the CLI's output)."""
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    repo = ensure_series_repo(series)
    spec = {**yaml.safe_load((campaign_file or series.campaign).read_text()), "repository": str(repo.path)}
    if edit is not None:
        edit(spec)
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(yaml.safe_dump(spec))
    url = f"sqlite:///{tmp_path / 'campaign.db'}"
    done = subprocess.run([*VMBISECT, "bisect", str(campaign), "--json", "--store", url],
                          capture_output=True, text=True, timeout=3 * 3600)
    assert done.returncode == 0, done.stderr[-3000:]
    return repo, url, done.stdout


def report_of(url: str, campaign_id: int) -> str:
    """`vmbisect report ID --format md` of the store at `url`."""
    done = subprocess.run([*VMBISECT, "report", str(campaign_id), "--format", "md", "--store", url],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
