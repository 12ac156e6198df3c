"""The high-level Worker: register async handlers per job type, then `await worker.run()`.

Run one from the command line with `python -m sepp.worker module:attr` (see `__main__`).
"""

from ._handler_error import DuplicateHandlerError, HandlerError
from ._worker import Handler, ShutdownHandle, Worker, default_worker_id

__all__ = [
    "DuplicateHandlerError",
    "Handler",
    "HandlerError",
    "ShutdownHandle",
    "Worker",
    "default_worker_id",
]
