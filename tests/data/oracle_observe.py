"""Dev tool (imported by the scheduler harnesses tests/data/sched_pp/oracle_pp.py and
tests/data/sched_spec/oracle_spec.py, not a test): pure observers on one of vLLM's schedulers.
Each wraps a method and calls the original unchanged, so vLLM behaves as it would alone."""


def observe(scheduler, kv_events: bool) -> tuple[list, list]:
    """(preemption log, KV events): the ids `_preempt_request` is called with, in order (the
    Scheduler exposes only a set), and with ``kv_events`` the events of every batch the
    scheduler publishes, as published. The caller clears both as it reads them."""
    preempt_log: list[str] = []
    orig_preempt = scheduler._preempt_request

    def observe_preempt(request, *a, **kw):
        preempt_log.append(request.request_id)
        return orig_preempt(request, *a, **kw)

    scheduler._preempt_request = observe_preempt
    events: list = []
    if kv_events:
        publish = scheduler.kv_event_publisher.publish

        def observe_publish(batch, *a, **kw):
            events.extend(batch.events)
            return publish(batch, *a, **kw)

        scheduler.kv_event_publisher.publish = observe_publish
    return preempt_log, events
