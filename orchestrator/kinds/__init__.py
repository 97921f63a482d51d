"""The campaign kinds, one module each (kernelci-core's runtime table): bisect_kind,
verify_kind, compare_kind, settings_kind, config_kind. Each declares one Kind record (kind.py),
its fields named and typed by the kind's spec: its spec, result, checks,
run, report, the files beside the report, progress, metric, who it mails and the dashboard's
estimate; table.py lists them in one literal table, and everything that depends on a campaign's
kind (`bisect`, `verify`, `compare`, `resume`, `report`, `status`, the mail, the dashboard) looks
it up there, never guessing it with isinstance or from the stored JSON's keys. A stored campaign
is read once (table.py open_campaign -> kind.py StoredCampaign: store, row, kind, spec) and that
object is handed to the kind's paths. run.py is the one run path of every kind. A new kind of
campaign is a new module and one more row."""
