"""Filling a token budget with quotes and summaries, by priority (the ContextBuilder's step 3).

``Filler.fill`` plans on token estimates (per-line counts plus fixed overheads), in this order:

1. each topic's best chunk, best topic first, offered an equal share of the budget;
2. the topics' summaries;
3. the topics' next chunks, round-robin (one a topic before any topic's next);
4. longer windows (up to ``quote_max_tokens``) for the quoted chunks, best first;
5. any chunk still unquoted, whatever its best line costs.

The caller then counts the rendered text exactly and ``Plan.undo``-es the last step while it is
over the budget; ``top_up`` offers what is left once more against the exact count, since the
estimates err on the safe side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hybrid_rag.context import evidence as ev
from hybrid_rag.types import ScoredChunk

MIN_SHARE = 40  # tokens: the smallest first-pass share of the budget a quote is offered
NOTE_RESERVE = 40  # tokens set aside for the notes the fill itself may add


@dataclass
class Plan:
    """A window (0-based line offsets, inclusive) per quoted chunk, the summaries shown, an undo log."""

    windows: dict[int, tuple[int, int]] = field(default_factory=dict)
    summaries: set[int] = field(default_factory=set)
    log: list[tuple[str, int, tuple[int, int] | None]] = field(default_factory=list)

    def set_window(self, i: int, window: tuple[int, int]) -> None:
        self.log.append(("quote", i, self.windows.get(i)))
        self.windows[i] = window

    def add_summary(self, topic: int) -> None:
        self.log.append(("summary", topic, None))
        self.summaries.add(topic)

    def undo(self) -> bool:
        """Take back the last step; False when there is none."""
        if not self.log:
            return False
        kind, key, previous = self.log.pop()
        if kind == "summary":
            self.summaries.discard(key)
        elif previous is None:
            del self.windows[key]
        else:
            self.windows[key] = previous
        return True


class Filler:
    """Plans which lines of which chunks to quote; see the module docstring for the order."""

    def __init__(
        self,
        chunks: Sequence[ScoredChunk],
        scores: Sequence[np.ndarray],
        labels: np.ndarray,
        line_costs: Sequence[Sequence[int]],
        overhead: Sequence[int],
        heading_cost: int,
        summary_cost: dict[int, int],
        fixed_cost: int,
        budget: int,
        quote_max_tokens: int,
    ) -> None:
        self.chunks = chunks
        self.scores = scores
        self.labels = labels.tolist()
        self.costs = line_costs
        self.overhead = overhead
        self.heading_cost = heading_cost
        self.summary_cost = summary_cost
        self.budget = budget
        self.quote_max = quote_max_tokens
        self.topics = sorted(set(self.labels))
        self.members = {t: [i for i, label in enumerate(self.labels) if label == t] for t in self.topics}
        rounds = max((len(m) for m in self.members.values()), default=0)
        self.order = [
            self.members[t][r] for r in range(rounds) for t in self.topics if r < len(self.members[t])
        ]
        self.plan = Plan()
        self.used = fixed_cost + NOTE_RESERVE
        room = budget - self.used - sum(summary_cost.values())
        self.share = max(
            MIN_SHARE, min(quote_max_tokens, room // max(len(chunks), 1) - max(overhead, default=0))
        )

    def fill(self) -> Plan:
        first = self.order[: len(self.topics)]
        for i in first:
            self.offer(i, self.share, long_line_ok=i == self.order[0])
        for t in self.topics:
            self.offer_summary(t, self.budget - self.used)
        for i in self.order[len(self.topics) :]:
            self.offer(i, self.share)
        for i in self.order:
            if i in self.plan.windows:
                self.extend(i)
        for i in self.order:
            if i not in self.plan.windows:
                self.offer(i, self.quote_max)
        return self.plan

    def top_up(self, exact: Callable[[Plan], int]) -> None:
        """Offer the unquoted chunks and missing summaries again against the exact count,
        keeping each addition only if the whole text still fits."""
        for kind, key in [("quote", i) for i in self.order] + [("summary", t) for t in self.topics]:
            room = self.budget - exact(self.plan)
            if room <= 0:
                return
            if kind == "quote" and key not in self.plan.windows:
                added = self.offer(key, room, room=room)
            elif kind == "summary":
                added = self.offer_summary(key, room)
            else:
                continue
            if added and exact(self.plan) > self.budget:
                self.plan.undo()

    # -- steps ---------------------------------------------------------------------------------

    def cost(self, i: int, window: tuple[int, int]) -> int:
        return sum(self.costs[i][window[0] : window[1] + 1])

    def topic_open(self, t: int) -> bool:
        return any(j in self.plan.windows for j in self.members[t])

    def window(self, i: int, cap: int) -> tuple[int, int] | None:
        """The best window of chunk ``i`` within ``cap`` tokens, off the lines other quotes hold."""
        c = self.chunks[i]
        taken: set[int] = set()
        for j, (lo, hi) in self.plan.windows.items():
            other = self.chunks[j]
            if j != i and other.path == c.path:
                taken.update(range(other.start_line + lo, other.start_line + hi + 1))
        blocked = [c.start_line + off in taken for off in range(len(self.costs[i]))]
        return ev.best_window(self.scores[i], self.costs[i], cap, blocked)

    def offer(self, i: int, share: int, *, long_line_ok: bool = False, room: int | None = None) -> bool:
        """Quote chunk ``i`` within ``share`` tokens of lines if it fits what is left."""
        t = self.labels[i]
        extra = self.overhead[i] + (0 if self.topic_open(t) else self.heading_cost)
        left = (self.budget - self.used if room is None else room) - extra
        w = self.window(i, min(share, left))
        if w is None and long_line_ok:
            w = self.window(i, min(self.quote_max, left))
        if w is None:
            return False
        self.plan.set_window(i, w)
        self.used += extra + self.cost(i, w)
        return True

    def offer_summary(self, t: int, room: int) -> bool:
        cost = self.summary_cost.get(t)
        if cost is None or t in self.plan.summaries or not self.topic_open(t) or cost > room:
            return False
        self.plan.add_summary(t)
        self.used += cost
        return True

    def extend(self, i: int) -> None:
        """A better-scoring window for a quoted chunk, if the budget left allows it."""
        old = self.plan.windows[i]
        cap = min(self.quote_max, self.budget - self.used + self.cost(i, old))
        w = self.window(i, cap)
        s = self.scores[i]
        if w is not None and w != old and s[w[0] : w[1] + 1].sum() > s[old[0] : old[1] + 1].sum():
            self.used += self.cost(i, w) - self.cost(i, old)
            self.plan.set_window(i, w)
