"""The fair line for the model: one generation at a time (llama.cpp is not re-entrant), first
come first served, each waiting request knowing its place.

Everything here runs on the server's event loop, so no lock is needed: a request `join`s, waits on its ticket until
`position` is 0 (its turn), generates, and `leave`s; leaving while still in line (a client gone, a time limit reached)
frees the place at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque


class Ticket:
    """A place in line; `position` is how many requests are ahead of it (0: it may generate now)."""

    def __init__(self, line: FairQueue) -> None:
        self._line = line
        self._moved = asyncio.Event()

    @property
    def position(self) -> int:
        waiting = self._line.waiting
        return waiting.index(self) + 1 if self in waiting else 0  # 0 when running (or gone) too

    async def moved(self, timeout: float) -> None:
        """Return when the line moved, or after `timeout` seconds (to look at the client and the clock)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._moved.wait(), timeout)
        self._moved.clear()


class FairQueue:
    """The line: `running` generates, `waiting` follow in arrival order."""

    def __init__(self) -> None:
        self.running: Ticket | None = None
        self.waiting: deque[Ticket] = deque()
        self.served = 0  # turns given, for /api/status

    def join(self) -> Ticket:
        ticket = Ticket(self)
        self.waiting.append(ticket)
        self._advance()
        return ticket

    def leave(self, ticket: Ticket) -> None:
        if ticket is self.running:
            self.running = None
        elif ticket in self.waiting:
            self.waiting.remove(ticket)
        self._advance()

    def _advance(self) -> None:
        if self.running is None and self.waiting:
            self.running = self.waiting.popleft()
            self.served += 1
        for ticket in ([self.running] if self.running else []) + list(self.waiting):
            ticket._moved.set()  # positions changed: every waiter reports its new one
