"""Documents the knowledge-base tests ingest: a Markdown handbook with nested headings and an
HTML FAQ, small enough to embed in a moment and written so each search mode has a clear answer."""

from __future__ import annotations

GUIDE = """# Handbook

Everything the operations team needs on one page.

## Backups

Backups run every night at two. Each backup is copied to a second region within the hour, and
kept for thirty days before it is deleted.

### Keys

Rotate the backup encryption keys every ninety days. The old key stays readable for a week so that
restores started before the rotation still finish.

### Restores

A restore is started from the console. Pick the backup, pick the target database, and confirm.
Restores of more than a terabyte take about an hour.

## Deployments

Deployments go out on weekdays between ten and four. Nobody deploys on a Friday afternoon.

### Rollbacks

A rollback is one click in the pipeline. It redeploys the previous build and keeps the logs of
the failed one for the post-mortem.

## Monitoring

Dashboards show latency, error rates and saturation for every service. Alerts page the person on
call when an error budget burns too fast.
"""

FAQ_ITEMS = [
    (
        "Who is on call?",
        "The on-call engineer carries the pager for a week. At night the pager wakes the "
        "primary first and, after ten minutes without an answer, the secondary.",
    ),
    (
        "How do I get access to production?",
        "Ask your manager to approve a request in the access portal; access expires after eight hours.",
    ),
    ("Where are the runbooks?", "Runbooks live next to each service's code, in a folder named runbooks."),
]


def guide_with(old: str, new: str) -> str:
    """The handbook with one sentence changed."""
    assert old in GUIDE
    return GUIDE.replace(old, new)


def html_page() -> str:
    items = "".join(f"<h2>{q}</h2><p>{a}</p>" for q, a in FAQ_ITEMS)
    return (
        "<!doctype html><html><head><title>Support FAQ</title><style>p {color: red}</style></head>"
        f"<body><h1>FAQ</h1><script>alert('never indexed')</script>{items}</body></html>"
    )
