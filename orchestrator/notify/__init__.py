"""Mail when a campaign ends (docs/mail.md): who is told (`recipients`: the `notify:` key of a
campaign file or a lab file), how the mail reaches them (`config`: the SMTP settings of
vmbisect's config file), what it says (`message`: a pure function of the ended campaign to an
EmailMessage) and the thin adapter that sends it (`smtp`). The store keeps what was sent
(Store.claim_mail), so a campaign is mailed once; commands/notify.py gathers a campaign's facts
and is the end hook cli.main registers."""
