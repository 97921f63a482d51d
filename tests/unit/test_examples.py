from pathlib import Path

import pytest

from orchestrator.campaign.file import load_campaign

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").rglob("campaign.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_shipped_example_campaigns_validate(path):
    assert load_campaign(path).name
