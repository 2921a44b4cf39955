"""The producer–consumer pipeline (DSP's sampler → feature loader → trainer chain).

:class:`Prefetcher` runs a producer (an iterable of bulks: sampling plus feature fetching) in
one background thread and hands its items to the consumer (the training loop) through a
bounded queue: with capacity 2, bulk ``i + 1`` (and ``i + 2``) is prepared while the model
trains on bulk ``i``. NumPy's and h5py's heavy calls release the GIL, so on a multi-core host
the two overlap for real.

Guarantees:

* the consumer sees exactly the producer's items, in order (so pipeline on and off give
  identical batches);
* an exception raised by the producer is re-raised in the consumer at the point where the
  failed item would have been delivered, with its original type and traceback;
* :meth:`Prefetcher.close` (called on exhaustion, on error, on ``break`` out of a ``for`` loop,
  or by garbage collection) stops the producer and joins its thread: none is left behind.
"""

import queue
import threading

__all__ = ["Prefetcher"]

_ITEM, _DONE, _ERROR = 0, 1, 2
_POLL_S = 0.05


def _produce(produce, q, stop):
    """The background thread: run ``produce()`` and post its items, then DONE or ERROR."""
    try:
        iterator = iter(produce())
        try:
            for item in iterator:
                if not _put(q, stop, (_ITEM, item)):
                    return
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
        _put(q, stop, (_DONE, None))
    except BaseException as exc:  # noqa: BLE001 -- handed to the consumer, not swallowed
        _put(q, stop, (_ERROR, exc))


def _put(q, stop, message):
    """Block until there is room in ``q`` (or until ``stop``); False if stopped."""
    while not stop.is_set():
        try:
            q.put(message, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


class Prefetcher:
    """Iterate over ``produce()`` with the work done ahead of time in a background thread.

    Parameters
    ----------
    produce : callable returning an iterable
        Called once, in the background thread.
    capacity : int
        Items prepared ahead at most (the queue's size), ``>= 1``.
    name : str
        Thread name (shows in debuggers and ``threading.enumerate()``).

    Examples
    --------
    >>> with Prefetcher(lambda: iter(range(3)), capacity=2) as p:
    ...     list(p)
    [0, 1, 2]
    """

    def __init__(self, produce, capacity=2, name="spsample-prefetch"):
        self._queue = queue.Queue(maxsize=int(capacity))
        self._stop = threading.Event()
        self._finished = False
        # The thread gets the queue and the event, not ``self``: an abandoned Prefetcher can
        # then be garbage-collected, and its ``__del__`` stops the thread.
        self._thread = threading.Thread(target=_produce, args=(produce, self._queue, self._stop),
                                        name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ consumer side
    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        while True:
            try:
                kind, value = self._queue.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    self.close()
                    raise RuntimeError("spsample loader: the background producer thread "
                                       "ended without a result") from None
        if kind == _ITEM:
            return value
        self.close()
        if kind == _ERROR:
            raise value
        raise StopIteration

    def close(self):
        """Stop the producer and join its thread (idempotent)."""
        self._finished = True
        self._stop.set()
        while self._thread.is_alive():
            try:                            # unblock a producer waiting on a full queue
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=_POLL_S)
        while not self._queue.empty():      # drop references to prepared items
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    @property
    def alive(self):
        """Whether the background thread is still running."""
        return self._thread.is_alive()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
