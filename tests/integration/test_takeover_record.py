"""What a takeover records as lost (queue/takeovers.record) on a real SQLite store: the boots the
lost runner had in flight, its guest still booting or up and measuring (its end never stored),
not a boot cut before that runner started nor one it finished."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from orchestrator.queue import takeovers
from orchestrator.store import Store, WorkerRow


def test_a_takeover_loses_the_boots_the_dead_runner_had_booting_or_measuring_and_no_other(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 't.db'}")
    cid = store.new_campaign("t", {})
    older = store.start_boot(cid, "a" * 40)  # cut by a controller before this runner
    store.end_boot(older, "ok", 1.0, host="h", facts={})
    time.sleep(0.01)
    started = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    time.sleep(0.01)
    whole, measuring, booting = (store.start_boot(cid, "a" * 40) for _ in range(3))
    store.end_boot(whole, "ok", 1.0, host="h", facts={"whole": True})
    store.end_boot(measuring, "ok", 1.0, host="h", facts={})
    store.add_run(cid, measuring, "a" * 40, {"iops": 1.0}, {})
    with store.session() as s, s.begin():
        s.add(WorkerRow(name="gone:1/0", machine="elsewhere", pid=1, pid_started="1", campaign_id=cid,
                        started=started, last_beat=started, timeout_s=30.0))
    at = started + dt.timedelta(seconds=60)
    with store.session() as s, s.begin():
        took = takeovers.record(s, cid, "gone:1/0", "here:2/0", at)
    assert took is not None
    assert [(b.boot_id, b.runs) for b in took.lost] == [(measuring, 1), (booting, 0)]
