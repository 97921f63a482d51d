from pathlib import Path

import pytest
import yaml

from orchestrator.campaign.file import load_campaign
from orchestrator.campaign.workload import choose_workload

ROOT = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(ROOT.rglob("campaign.yaml"))
# every commit bisection shipped (campaign.yaml and its siblings such as scsi-mq/host-cpu.yaml)
BISECTIONS = [p for p in sorted(ROOT.rglob("*.yaml"))
              if "linux.git" not in p.parts and (doc := yaml.safe_load(p.read_text())) and isinstance(doc, dict)
              and {"good", "bad", "workload", "metric"} <= doc.keys() and "kind" not in doc]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.parent.name for p in EXAMPLES])
def test_shipped_example_campaigns_validate(path):
    assert load_campaign(path).name


@pytest.mark.parametrize("path", BISECTIONS, ids=[str(p.relative_to(ROOT)) for p in BISECTIONS])
def test_every_shipped_bisection_names_a_metric_and_watches_its_workload_records(path):
    choice = choose_workload(load_campaign(path))
    assert choice.direction in ("higher", "lower")
    assert [m.name for m in choice.watched] == list(load_campaign(path).metric.watch)
