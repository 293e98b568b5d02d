"""Pools of forked worker processes, for the commands that spread work over cores.

`rtf match --workers` forks its matchers after registering the queries (each
has the engine, shared copy-on-write); registration forks parsers
(`rtf.io.parse_ahead`). Both take their pool here, made the same way.

Each worker has two pipes of its own, one for its tasks and one for its
results, whose ends only it and this process hold; tasks go to the workers
in turn, and results are read back in the order the tasks were sent. So a
worker that ends abruptly (killed by a signal, or by the system when
memory runs out) is seen at once -- its process has ended, or its result
pipe ends mid-message -- and the result awaited from it raises
`rtf.errors.WorkerLostError`. The pools of the standard library wait for
it forever instead: `multiprocessing.Pool` never reports a lost task, and
a `ProcessPoolExecutor` worker killed while writing a large result leaves
a half message in the pipe all workers share.
"""

from __future__ import annotations

import pickle
import queue
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import wait

from rtf.errors import WorkerLostError

_PROTOCOL = pickle.HIGHEST_PROTOCOL
_LOST = ("a worker process ended abruptly (killed, or out of memory); its results are lost: "
         "run again, with fewer --workers if memory ran out")


class ForkedPool:
    """`workers` forked processes; `ordered_map` runs a function over items in them.

    Use it as a context: leaving it stops the workers (their unfinished work is
    dropped). Each worker inherits this process's memory as it is now (what it
    needs is left in a module global before the call: nothing is pickled to
    start it), then runs `initializer(*initargs)`. SIGTERM is held while the
    workers are forked, and each releases it only once it has the default
    action: a SIGTERM that reached a worker still holding the parent's Python
    handler (`rtf.cli.Terminated`) would be raised inside its loop instead of
    ending it. OSError when no process can be forked.
    """

    def __init__(self, workers: int, initializer=None, initargs: tuple = ()):
        import multiprocessing

        context = multiprocessing.get_context("fork")
        pipes = [(context.Pipe(duplex=False), context.Pipe(duplex=False)) for _ in range(workers)]
        self._workers: list[_Worker] = []
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            for k in range(workers):
                process = context.Process(target=_serve, args=(k, pipes, initializer, initargs), daemon=True)
                process.start()
                (task_reader, task_writer), (result_reader, _) = pipes[k]
                self._workers.append(_Worker(process, task_writer, result_reader))
        except BaseException:
            self.close()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            for (task_reader, _), (_, result_writer) in pipes:  # the workers' ends are theirs alone
                task_reader.close()
                result_writer.close()
        self._sent = 0  # tasks sent, in all
        self._received = 0

    def ordered_map(self, fn: Callable, items: Iterable, ahead: int, *,
                    argument: Callable | None = None, fallback: Callable | None = None) -> Iterator:
        """``(item, fn(argument(item)))`` for each of `items`, computed in the workers,
        yielded in order (`argument` defaults to the item itself).

        At most `ahead` items are read and sent beyond the one whose result is
        awaited. An error raised by `items` is raised after the results of the
        items before it. A task's error is raised as it is, and a worker that
        ended abruptly raises WorkerLostError; with `fallback`, the item gets
        ``fallback(item)`` instead, and after a lost worker so does every item
        left (computed in this process).
        """
        pending: deque = deque()
        items = iter(items)
        failure: Exception | None = None
        lost = False
        while True:
            while failure is None and len(pending) < ahead:
                try:
                    item = next(items)
                except StopIteration:
                    break
                except Exception as e:  # raised in its turn, below
                    failure = e
                    break
                if not lost:
                    self._send(fn, item if argument is None else argument(item))
                pending.append(item)
            if not pending:
                if failure is not None:
                    raise failure
                return
            item = pending.popleft()
            if lost:
                yield item, fallback(item)
                continue
            try:
                result = self._receive()
            except Exception as e:
                if fallback is None:
                    raise
                if isinstance(e, WorkerLostError):  # nothing more is sent: the rest is computed here
                    lost = True
                    self.close()
                result = fallback(item)
            yield item, result

    def _send(self, fn: Callable, arg) -> None:
        worker = self._workers[self._sent % len(self._workers)]
        worker.outbox.put(pickle.dumps((fn, arg), _PROTOCOL))
        self._sent += 1

    def _receive(self):
        """The result of the oldest task not yet received (its worker's next)."""
        worker = self._workers[self._received % len(self._workers)]
        self._received += 1
        ready = wait([worker.results, worker.process.sentinel])
        if worker.results not in ready:
            raise WorkerLostError(_LOST)
        try:
            ok, value = pickle.loads(worker.results.recv_bytes())
        except (EOFError, OSError):  # the worker ended while writing it
            raise WorkerLostError(_LOST) from None
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def __enter__(self) -> ForkedPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def forked_pool(workers: int, initializer=None, initargs: tuple = ()) -> ForkedPool:
    """A `ForkedPool` of `workers` processes."""
    return ForkedPool(workers, initializer, initargs)


class _Worker:
    """A worker process, as this process sees it: its tasks are written by a thread
    of its own (`outbox`), so that sending never waits for a busy worker."""

    def __init__(self, process, tasks, results):
        self.process = process
        self.tasks = tasks
        self.results = results
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()
        self.feeder = threading.Thread(target=self._feed, name="rtf-worker-feeder", daemon=True)
        self.feeder.start()

    def _feed(self) -> None:
        while True:
            payload = self.outbox.get()
            if payload is None:
                return
            try:
                self.tasks.send_bytes(payload)
            except OSError:  # the worker has ended (its end of the pipe closed)
                return

    def stop(self) -> None:
        self.outbox.put(None)
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.feeder.join()
        self.tasks.close()
        self.results.close()


def _serve(index: int, pipes: list, initializer, initargs: tuple) -> None:
    """A worker's loop: read a task, run it, write back ``(ok, result or error)``;
    ends when this process's end of the task pipe closes."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    for k, ((task_reader, task_writer), (result_reader, result_writer)) in enumerate(pipes):
        task_writer.close()
        result_reader.close()
        if k != index:  # another worker's ends: only it may hold them
            task_reader.close()
            result_writer.close()
    (tasks, _), (_, results) = pipes[index]
    try:
        if initializer is not None:
            initializer(*initargs)
        while True:
            try:
                fn, arg = pickle.loads(tasks.recv_bytes())
            except EOFError:  # this process's pool is gone
                return
            try:
                answer = (True, fn(arg))
            except Exception as e:
                answer = (False, e)
            try:
                payload = pickle.dumps(answer, _PROTOCOL)
            except Exception as e:  # an answer that cannot be sent back
                payload = pickle.dumps((False, RuntimeError(f"{type(e).__name__}: {e}")), _PROTOCOL)
            results.send_bytes(payload)
    except KeyboardInterrupt:  # Ctrl-C reached the whole group: the parent stops the pool
        return
