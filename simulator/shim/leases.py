"""Standing heartbeats: a stable member's beats as arithmetic instead of one event per beat.

A live member without network latency beats every ``interval`` seconds from a known instant, and
while its group stays stable every one of those beats is answered NONE and only pushes its
session deadline on. Long replays sent hundreds of thousands of such beats, each two timers and
a few loop steps, and they cost more than the assignor. So a member whose beat was just
answered NONE may leave a *standing order* (a :class:`Lease`) at the coordinator: "I beat at
``base + k * interval``, k = 1, 2, ...". No event happens for those beats. A beat matters only
when

- its answer would not be NONE: the group leaves Stable (a rebalance: REBALANCE_IN_PROGRESS, or
  a new generation: ILLEGAL_GENERATION) or the member is removed or replaced (UNKNOWN_MEMBER_ID).
  The group ends the lease at that moment, and at the next instant of its sequence the
  coordinator has the member send that beat for real (members woken together share one timer
  and beat in the group's member order), and it gets that answer as before;
- the member stops beating (it rejoins, leaves, crashes, pauses): the coordinator then sets the
  session timer a real last beat would have left, ``last beat + session timeout``.

Same-instant rule (explicit, where the event-per-beat loop left it to the order of asyncio's
timer heap): a beat due at the very instant something else happens comes first, except after
the coordinator's own deadlines (a session or rebalance timeout, the initial delay). So a
member's request or a timeline event at a beat's instant (a LeaveGroup, a probing rebalance's
JoinGroup, a crash) is heard at the member's next beat, and a member that stops at a beat's
instant did send it; a session that expires at a beat's instant is heard by that beat. These
are the orders the event-per-beat loop mostly produced (a probing rebalance is due a whole
number of heartbeat intervals after the generation that scheduled it, and so is a crashed
member's session expiry, when the interval divides the session timeout).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

#: Instants closer than this are one instant (the virtual clock's resolution).
SAME_INSTANT_S = 1e-6


@dataclass(slots=True)
class Lease:
    """One member's standing heartbeats: beats at ``base + k * interval_s`` for k >= 1.

    ``fallback_deadline`` is the session deadline the coordinator held when the lease began
    (used if the lease ends before its first beat); ``latest_deadline`` the latest one any real
    Heartbeat with this member id set meanwhile (an impostor's, in the hostile tests).
    ``wake()`` is called at the instant of the member's next beat, once the lease has ended:
    the member sends that beat for real.
    """

    member_id: str
    base: float
    interval_s: float
    session_s: float
    wake: Callable[[], object]
    fallback_deadline: float | None = None
    latest_deadline: float | None = None

    def beats_before(self, now: float, *, including_now: bool = True) -> int:
        """How many beats went out by ``now``; a beat due at ``now`` counts unless
        ``including_now`` is False (it has not gone out yet)."""
        slack = SAME_INSTANT_S if including_now else -SAME_INSTANT_S
        return max(0, math.floor((now + slack - self.base) / self.interval_s))

    def next_beat(self, now: float, *, heard_now: bool = False) -> float:
        """The instant of the first beat still to come at ``now``: after ``now``, or ``now``
        itself if a beat due now comes after what just happened (``heard_now``)."""
        return self.base + (self.beats_before(now, including_now=not heard_now) + 1) \
            * self.interval_s

    def session_deadline(self, now: float, *, including_now: bool = True) -> float | None:
        """Where the member's session timer stands at ``now``: its last beat + session (a beat
        due at ``now`` counted as in :meth:`beats_before`)."""
        sent = self.beats_before(now, including_now=including_now)
        deadline = (self.base + sent * self.interval_s + self.session_s if sent
                    else self.fallback_deadline)
        if self.latest_deadline is not None and (deadline is None
                                                 or self.latest_deadline > deadline):
            return self.latest_deadline
        return deadline


__all__ = ["SAME_INSTANT_S", "Lease"]
