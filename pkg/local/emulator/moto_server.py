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
# It also numbers FIFO messages as AWS does: moto gives each one 20 random
# digits as its SequenceNumber, where AWS's increase within a message group
# (the worker's fencing tokens, package ledger, rely on that). Here they
# increase in the order messages enter their queue (sends are serialised),
# 20 digits like AWS's.
import faulthandler
import signal
import sys
import threading
from copy import deepcopy

from moto.core.utils import unix_time, unix_time_millis
from moto.server import main
from moto.sqs import models

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
        queue.dead_letter_queue.add_message(message)
    return result, wake


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
        return _original_receive(
            self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names
        )
    attribute_names = message_attribute_names or []
    polling_end = unix_time() + wait_seconds_timeout
    with _lock:
        cond = _condition(queue_name)
        while True:
            result, wake = _scan(queue, count, visibility_timeout, attribute_names)
            remaining = polling_end - unix_time()
            if result or remaining <= 0:
                return result
            if wake is not None:
                remaining = min(remaining, max(wake - unix_time_millis(), 1) / 1000.0)
            cond.wait(remaining)


models.SQSBackend.receive_message = receive_message

_last_sequence_number = [0]


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

if __name__ == "__main__":
    # kill -USR1 <pid> writes every thread's stack to the emulator's log.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    sys.exit(main(sys.argv[1:]))
