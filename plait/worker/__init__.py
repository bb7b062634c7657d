"""`plait worker`: Celery workers that execute stored runs, on any number of machines sharing one
PostgreSQL database (docs/deploy.md).

- `app.py`: the Celery app and the settings every process must agree on (late acknowledgement,
  one visibility timeout, prefetch 1).
- `runtime.py`: one worker process's engine, on an event loop of its own, fed by Celery's threads.
- `relay.py`: the outbox relay (messages written with the runs they announce, sent to the
  broker) and the reaper (runs whose worker died, announced again).
- `events.py`: run events over Redis pub/sub, so that SSE, the workbench and `plait run`'s
  progress see what workers execute.
"""
