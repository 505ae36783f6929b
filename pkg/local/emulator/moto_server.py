# moto_server with AWS's FIFO receive semantics (see fifo.go).
#
# moto 5.2.1 decides whether a FIFO message group is locked from a "pending"
# set it only cleans up while scanning, in queue order: when several
# in-flight messages of one group become visible at about the same time,
# every earlier one still sees a later one pending and is skipped, so the
# group's last message is handed out first. Its receive also takes no lock,
# so two concurrent receives can hand out the same message.
#
# This launcher replaces SQSBackend.receive_message for FIFO queues with
# AWS's documented behaviour, then runs moto's own server:
#   - a group yields nothing while any message of it is in flight;
#   - otherwise its messages come back from the head, in order, as many as
#     fit in the batch;
#   - a message received maxReceiveCount times moves to the dead-letter
#     queue on the next receive that would return it, and its group goes on;
#   - receives, sends, deletes and visibility changes are serialised, and a
#     long poll wakes when a message is sent, deleted or made visible.
# Standard queues keep moto's own receive.
#
# A message SQS moves to a FIFO DLQ takes its MessageId as deduplication id,
# as AWS documents, and remembers its source queue (ReceiveMessage's
# DeadLetterQueueSourceArn). StartMessageMoveTask, ListMessageMoveTasks and
# CancelMessageMoveTask (DLQ redrive, absent from moto 5.2.1) move a DLQ's
# messages back as new messages; see start_message_move_task below.
#
# A FIFO deduplication id holds for five minutes from its first send, as in
# AWS, whether or not that message has been deleted since: moto 5.2.1 only
# compares with messages still in the queue, so an SDK retry of a send whose
# answer was lost, arriving after the first copy was processed and deleted,
# became a second message. The scope is the queue, or the message group
# with DeduplicationScope=messageGroup.
#
# A FIFO receive honours ReceiveRequestAttemptId as AWS documents: a retry
# with the same id within five minutes, none of its messages deleted or
# their visibility changed since, returns the same messages and receipt
# handles (their visibility timeout starting again) instead of finding them
# in flight; an SDK retry of a receive whose answer was lost then loses
# nothing for the length of a visibility timeout.
#
# It also numbers FIFO messages as AWS does: moto gives each one 20 random
# digits as its SequenceNumber, where AWS's increase within a message group
# (the worker's fencing tokens, package ledger, rely on that). Here they
# increase in the order messages enter their queue (sends are serialised),
# 20 digits like AWS's.
import base64
import faulthandler
import json
import signal
import sys
import threading
import uuid
from copy import deepcopy

from moto.core.responses import ActionResult
from moto.core.utils import unix_time, unix_time_millis
from moto.server import main
from moto.sqs import models
from moto.sqs.exceptions import SQSException
from moto.sqs.responses import SQSResponse

_lock = threading.RLock()
_waiting = {}  # queue name -> Condition on _lock, for long polls on it
_original_receive = models.SQSBackend.receive_message


def _condition(queue_name):
    cond = _waiting.get(queue_name)
    if cond is None:
        cond = _waiting[queue_name] = threading.Condition(_lock)
    return cond


def _locked(name):
    original = getattr(models.SQSBackend, name)

    def call(self, *args, **kwargs):
        queue_name = kwargs.get("queue_name", args[0] if args else None)
        with _lock:
            try:
                return original(self, *args, **kwargs)
            finally:
                # Wake only the long polls on this queue.
                _condition(queue_name).notify_all()

    setattr(models.SQSBackend, name, call)


for _name in (
    "send_message",
    "send_message_batch",
    "delete_message",
    "delete_message_batch",
    "change_message_visibility",
    "change_message_visibility_batch",
    "purge_queue",
):
    _locked(_name)


# moto recomputes every queue attribute, each approximate count a pass over
# all messages with a clock read per message, several times per send (its
# validation reads queue.attributes): under load, sends queue up behind each
# other. Count with one clock read instead.
def _count(predicate):
    def count(self):
        now = unix_time_millis()
        return sum(1 for m in self._messages if predicate(m, now))

    return property(count)


models.Queue.approximate_number_of_messages = _count(lambda m, now: now > m.visible_at and now >= m.delayed_until)
models.Queue.approximate_number_of_messages_not_visible = _count(lambda m, now: now <= m.visible_at)
models.Queue.approximate_number_of_messages_delayed = _count(lambda m, now: now < m.delayed_until)


def _scan(queue, count, visibility_timeout, attribute_names):
    """One pass over a FIFO queue under the lock.

    Returns the received messages and, when none were, the epoch-ms time at
    which an in-flight message becomes visible next (or None).
    """
    now_ms = unix_time_millis()
    wake = None
    locked = set()
    for m in queue._messages:
        if m.visible_at >= now_ms:  # in flight
            locked.add(m.group_id)
            wake = m.visible_at if wake is None else min(wake, m.visible_at)
    redrive = queue.dead_letter_queue is not None and queue.redrive_policy
    # moto's own retention check recomputes every queue attribute (O(n)) per
    # message; read the period once.
    retention_ms = int(queue.message_retention_period) * 1000
    result, to_dlq, stopped = [], [], set()
    for message in queue._messages:
        group = message.group_id
        if group in locked or group in stopped:
            continue
        queue.pending_messages.discard(message)
        if message.delayed or message.sent_timestamp + retention_ms <= now_ms:
            stopped.add(group)  # the rest of its group waits behind it
            continue
        if redrive and message.approximate_receive_count >= queue.redrive_policy["maxReceiveCount"]:
            to_dlq.append(message)
            continue
        queue.pending_messages.add(message)
        message.mark_received(visibility_timeout=visibility_timeout)
        copy = deepcopy(message)
        models._filter_message_attributes(copy, attribute_names)
        result.append(copy)
        if len(result) >= count:
            break
    for message in to_dlq:
        queue._messages.remove(message)
        _dead_letter(queue, message)
    return result, wake


# Message id -> ARN of the queue whose RedrivePolicy moved it to its DLQ:
# ReceiveMessage's DeadLetterQueueSourceArn, and where StartMessageMoveTask
# without a DestinationArn returns it. A client's own SendMessage to a DLQ
# has none.
_dlq_sources = {}


def _dead_letter(queue, message):
    """Moves message (already out of queue) to queue's DLQ, as SQS does."""
    _dlq_sources[message.id] = queue.queue_arn
    if queue.dead_letter_queue.fifo_queue:
        # AWS: "the original message's deduplication ID will be replaced with
        # the original message's ID", so two dead letters that shared a
        # deduplication ID are both kept.
        message.deduplication_id = message.id
    queue.dead_letter_queue.add_message(message)


def receive_message(
    self,
    queue_name,
    count,
    wait_seconds_timeout,
    visibility_timeout,
    message_attribute_names=None,
):
    queue = self.get_queue(queue_name)
    if not queue.fifo_queue:
        before = set(map(id, queue._messages)) if queue.dead_letter_queue is not None else ()
        result = _original_receive(
            self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names
        )
        if before:  # moto's own receive moved these to the DLQ
            for message in list(queue.dead_letter_queue._messages):
                if id(message) in before:
                    _dlq_sources[message.id] = queue.queue_arn
        return result
    attribute_names = message_attribute_names or []
    polling_end = unix_time() + wait_seconds_timeout
    attempt = getattr(_receive_attempt, "id", None)
    with _lock:
        if attempt:
            again = _retried(queue, attempt, visibility_timeout, attribute_names)
            if again is not None:
                return again
        cond = _condition(queue_name)
        while True:
            result, wake = _scan(queue, count, visibility_timeout, attribute_names)
            remaining = polling_end - unix_time()
            if result or remaining <= 0:
                if attempt and result:
                    _remember(queue, attempt, result)
                return result
            if wake is not None:
                remaining = min(remaining, max(wake - unix_time_millis(), 1) / 1000.0)
            cond.wait(remaining)


models.SQSBackend.receive_message = receive_message

# ReceiveRequestAttemptId: the id of the receive being answered (set by
# SQSResponse.receive_message, per request thread), and per queue each
# attempt's messages with the receipt handle and visibility it gave them.
_receive_attempt = threading.local()
_ATTEMPT_MS = 5 * 60 * 1000


def _remember(queue, attempt, result):
    now_ms = unix_time_millis()
    attempts = queue.__dict__.setdefault("_hookpack_attempts", {})
    for key, (at, _) in list(attempts.items()):
        if now_ms - at >= _ATTEMPT_MS:
            del attempts[key]
    by_handle = {m.receipt_handle: m for m in queue._messages}
    attempts[attempt] = (now_ms, [(by_handle[r.receipt_handle], r.receipt_handle, by_handle[r.receipt_handle].visible_at) for r in result])


def _retried(queue, attempt, visibility_timeout, attribute_names):
    """The messages of an earlier receive with this attempt id, again, or
    None when there is none within five minutes or one of its messages was
    deleted, received again or had its visibility changed since."""
    at, received = queue.__dict__.get("_hookpack_attempts", {}).get(attempt, (0, None))
    if received is None or unix_time_millis() - at >= _ATTEMPT_MS:
        return None
    for message, handle, visible_at in received:
        if message not in queue._messages or message.receipt_handle != handle or message.visible_at != visible_at:
            return None
    result = []
    for message, _, _ in received:
        if visibility_timeout:
            message.change_visibility(visibility_timeout)
        copy = deepcopy(message)
        models._filter_message_attributes(copy, attribute_names)
        result.append(copy)
    _remember(queue, attempt, result)
    return result

_last_sequence_number = [0]


_original_add_message = models.Queue.add_message


def _add_message(self, message):
    if self.fifo_queue and message.deduplication_id:
        with _lock:
            seen = self.__dict__.setdefault("_hookpack_dedup", {})
            now = message.sent_timestamp or int(unix_time_millis())
            window = models.DEDUPLICATION_TIME_IN_SECONDS * 1000
            for key, at in list(seen.items()):
                if now - at >= window:
                    del seen[key]
            scope = message.group_id if self.attributes.get("DeduplicationScope") == "messageGroup" else ""
            key = (scope, message.deduplication_id)
            if key in seen:
                return
            seen[key] = now
    return _original_add_message(self, message)


models.Queue.add_message = _add_message


def _set_sequence_number(message, value):
    # send_message assigns moto's random digits under _lock: replace them.
    if value is not None:
        with _lock:
            _last_sequence_number[0] += 1
            value = "%020d" % _last_sequence_number[0]
    message.__dict__["_hookpack_sequence_number"] = value


models.Message.sequence_number = property(
    lambda message: message.__dict__.get("_hookpack_sequence_number"), _set_sequence_number
)


# DLQ redrive: StartMessageMoveTask, ListMessageMoveTasks and
# CancelMessageMoveTask, which moto 5.2.1 lacks. A task runs to completion
# inside StartMessageMoveTask (MaxNumberOfMessagesPerSecond is validated,
# not honoured), so a task is never RUNNING and cancelling one finds none.
_move_tasks = {}  # source ARN -> its tasks, oldest first


class _NotFound(SQSException):
    code = "ResourceNotFoundException"


def _invalid(message):
    return SQSException("InvalidParameterValue", message)


def _queue_by_arn(arn, parameter):
    parts = (arn or "").split(":")
    queue = None
    if len(parts) == 6 and parts[2] == "sqs":
        queue = models.sqs_backends[parts[4]][parts[3]].queues.get(parts[5])
    if queue is None:
        raise _NotFound(f"The resource that you specified for the {parameter} parameter doesn't exist.")
    return queue


def _backend_of(queue):
    return models.sqs_backends[queue.account_id][queue.region]


def _redrive(source, destination, task):
    """Moves the messages in source, oldest first, as new messages.

    A message goes to destination or, when that is None, back to the queue
    that moved it to the DLQ. In-flight messages stay (and, in a FIFO DLQ,
    the rest of their group behind them). Sets task's Status,
    ApproximateNumberOfMessagesMoved and FailureReason.
    """
    now_ms = unix_time_millis()
    retention_ms = int(source.message_retention_period) * 1000
    locked = {m.group_id for m in source._messages if m.visible_at >= now_ms} if source.fifo_queue else set()
    moved = 0
    for message in list(source._messages):
        if message.group_id in locked or message.visible_at >= now_ms or message.delayed:
            continue
        if message.sent_timestamp + retention_ms <= now_ms:
            continue  # expired: SQS no longer returns it
        target = destination
        if target is None:
            arn = _dlq_sources.get(message.id)
            if arn is None:
                # A client sent it to the DLQ itself: it has no source queue
                # to go back to, and AWS documents no default. Fail the task
                # there, as AWS fails one whose destination is gone.
                task.update(
                    Status="FAILED",
                    FailureReason=f"message {message.id} was not moved to the DLQ by SQS: it has no source queue; give a DestinationArn",
                )
                break
            try:
                target = _queue_by_arn(arn, "DestinationArn")
            except _NotFound:
                task.update(Status="FAILED", FailureReason="AWS.SimpleQueueService.NonExistentQueue")
                break
        # A new message: new MessageId, SentTimestamp, SequenceNumber and
        # retention; ApproximateReceiveCount 0. The deduplication ID is the
        # DLQ message's ID, never the original one: a redrive within five
        # minutes of the original send must not be dropped as its duplicate.
        _backend_of(target).send_message(
            target.name,
            message.body,
            message_attributes=deepcopy(message.message_attributes),
            deduplication_id=message.id if target.fifo_queue else None,
            group_id=message.group_id if target.fifo_queue else None,
            system_attributes=deepcopy(message.system_attributes),
        )
        source._messages.remove(message)
        source.pending_messages.discard(message)
        _dlq_sources.pop(message.id, None)
        moved += 1
    task["ApproximateNumberOfMessagesMoved"] = moved
    if task["Status"] == "RUNNING":
        task["Status"] = "COMPLETED"


def start_message_move_task(self):
    source = _queue_by_arn(self._get_param("SourceArn"), "SourceArn")
    destination_arn = self._get_param("DestinationArn")
    destination = _queue_by_arn(destination_arn, "DestinationArn") if destination_arn else None
    rate = self._get_param("MaxNumberOfMessagesPerSecond")
    if rate is not None and not 1 <= int(rate) <= 500:
        raise _invalid(
            "Value for parameter MaxNumberOfMessagesPerSecond is invalid. "
            "Reason: You must enter a number that's between 1 and 500."
        )
    with _lock:
        if not _backend_of(source).list_dead_letter_source_queues(source.name):
            raise _invalid("Source queue must be configured as a Dead Letter Queue.")
        if destination is not None and destination.fifo_queue != source.fifo_queue:
            raise _invalid("The destination queue must be of the same type as the source queue.")
        task_id = str(uuid.uuid4())
        handle = base64.b64encode(json.dumps({"taskId": task_id, "sourceArn": source.queue_arn}).encode()).decode()
        task = {
            "TaskHandle": handle,
            "Status": "RUNNING",
            "SourceArn": source.queue_arn,
            "ApproximateNumberOfMessagesToMove": source.approximate_number_of_messages,
            "StartedTimestamp": int(unix_time_millis()),
        }
        if destination is not None:
            task["DestinationArn"] = destination.queue_arn
        if rate is not None:
            task["MaxNumberOfMessagesPerSecond"] = int(rate)
        _move_tasks.setdefault(source.queue_arn, []).append(task)
        _redrive(source, destination, task)
    return ActionResult({"TaskHandle": handle})


def list_message_move_tasks(self):
    source = _queue_by_arn(self._get_param("SourceArn"), "SourceArn")
    limit = self._get_param("MaxResults")
    limit = 1 if limit is None else int(limit)
    if not 1 <= limit <= 10:
        raise _invalid("Value for parameter MaxResults is invalid. Reason: You must enter a number that's between 1 and 10.")
    with _lock:
        tasks = list(reversed(_move_tasks.get(source.queue_arn, [])))[:limit]
        # AWS gives a task's handle only while it runs.
        results = [{k: v for k, v in t.items() if k != "TaskHandle" or t["Status"] == "RUNNING"} for t in tasks]
    return ActionResult({"Results": results})


def cancel_message_move_task(self):
    try:
        handle = json.loads(base64.b64decode(self._get_param("TaskHandle") or "", validate=True))
        source_arn = handle["sourceArn"]
    except (ValueError, TypeError, KeyError):
        raise _invalid("Value for parameter TaskHandle is invalid.")
    _queue_by_arn(source_arn, "SourceArn")
    raise _NotFound("Task does not exist.")  # every task has completed


def _receive_as_aws(original):
    """moto's ReceiveMessage with the request's ReceiveRequestAttemptId
    handed to receive_message and each dead letter's
    DeadLetterQueueSourceArn."""

    def receive(self):
        _receive_attempt.id = self._get_param("ReceiveRequestAttemptId")
        try:
            result = original(self)
        finally:
            _receive_attempt.id = None
        names = set(self._get_param("AttributeNames", []) + self._get_param("MessageSystemAttributeNames", []))
        if "All" in names or "DeadLetterQueueSourceArn" in names:
            for msg in result.result.get("Messages", []):
                arn = _dlq_sources.get(msg["MessageId"])
                if arn is not None:
                    msg.setdefault("Attributes", {})["DeadLetterQueueSourceArn"] = arn
        return result

    return receive


SQSResponse.start_message_move_task = start_message_move_task
SQSResponse.list_message_move_tasks = list_message_move_tasks
SQSResponse.cancel_message_move_task = cancel_message_move_task
SQSResponse.receive_message = _receive_as_aws(SQSResponse.receive_message)


# The services most tests call, imported by a zygote before it forks: moto
# imports a service on its first request, and SSM's models pull in EC2's
# (about 2 s of CPU per server started cold). Not CloudFormation (the deploy
# rehearsal's alone): it imports nearly every backend, and every fork's
# heap would carry them.
_SERVICES = ("sqs", "dynamodb", "ssm", "s3", "kms", "sts", "cloudwatch", "logs", "sns")


def _zygote(path):
    """Listen on the Unix socket path; each connection sends "host port nice\n"
    and gets a moto server forked from this warm process, at the client's
    nice value (a server started as the client's child would inherit it),
    answering "ok pid\n". The server lives as long as the connection: when
    the client closes it (or dies), the server exits."""
    import importlib
    import os
    import socket

    for name in _SERVICES:
        for mod in ("models", "responses", "urls"):
            try:
                importlib.import_module("moto.%s.%s" % (name, mod))
            except ImportError:
                pass
    # What was imported stays out of every fork's garbage collections: a
    # collection would walk (and so copy) the whole inherited heap.
    import gc

    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked servers reap themselves
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(64)
            if not chunk:
                break
            line += chunk
        try:
            host, port, nice = line.decode().split()
            nice = int(nice)
        except ValueError:
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            srv.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            except OSError:
                pass

            def watch():
                try:
                    while conn.recv(64):
                        pass
                finally:
                    os._exit(0)

            threading.Thread(target=watch, daemon=True).start()
            conn.sendall(b"ok %d\n" % os.getpid())
            faulthandler.register(signal.SIGUSR1, all_threads=True)
            try:
                main(["-H", host, "-p", port])
            finally:
                os._exit(0)
        conn.close()


if __name__ == "__main__":
    # kill -USR1 <pid> writes every thread's stack to the emulator's log.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if len(sys.argv) == 3 and sys.argv[1] == "--zygote":
        _zygote(sys.argv[2])
    sys.exit(main(sys.argv[1:]))
