"""Enqueue from code that is not async (a script, a WSGI view) with the blocking client.

SEPP_ADDR=127.0.0.1:50051 python examples/sync_producer.py
"""

from __future__ import annotations

import os

from sepp import EnqueueRequest, Payload
from sepp.sync import SeppClient

ADDR = os.environ.get("SEPP_ADDR", "127.0.0.1:50051")


def main() -> None:
    with SeppClient.connect(ADDR) as client:
        ack = client.enqueue(
            EnqueueRequest(
                "emails", "send_welcome", payload=Payload(b'{"user": 7}', "application/json")
            )
        )
        print("enqueued job", ack.job_id)
        # Jobs that examples/worker.py (and cli_worker.py) handle: welcomes for three more users.
        results = client.enqueue_batch(
            EnqueueRequest(
                "emails",
                "send_welcome",
                payload=Payload(f'{{"user": {user}}}'.encode(), "application/json"),
            )
            for user in (8, 9, 10)
        )
        print("batch:", [str(r) for r in results])


if __name__ == "__main__":
    main()
