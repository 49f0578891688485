"""Filling a token budget with quotes and summaries, by priority (the ContextBuilder's step 3).

``Filler.fill`` plans on token estimates (per-line counts plus fixed overheads), in this order:

1. one quote a topic, best topic first: its best-ranked chunk whose most relevant lines fit an
   equal share of the budget, keeping room for the cheapest first quote of each later topic that
   the budget can hold after the better topics' (``served``: at a small budget the best topic's
   evidence comes first, and a later topic that cannot fit takes no room from it);
   a topic none of whose chunks fits then gets its single most relevant line that fits what is
   left (at most ``quote_max_tokens``), so that one topic's long line cannot take the room of
   the others' first quotes; then the first quotes grow back to the share where room allows;
2. the topics' summaries;
3. the topics' next chunks, round-robin (one a topic before any topic's next);
4. longer windows (up to ``quote_max_tokens``) for the quoted chunks, best first;
5. any chunk still unquoted, at up to ``quote_max_tokens``.

The caller then counts the rendered text exactly and ``Plan.undo``-es the last step while it is
over the budget; ``top_up`` offers what is left once more against the exact count, since the
estimates err on the safe side, narrowing a quote that overflows until it fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

import hybrid_rag.context.evidence as ev
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
        self.need = {t: self.cheapest(t) for t in self.topics}  # a first quote's fewest tokens
        self.used = fixed_cost + NOTE_RESERVE
        self.served = self.first_quotes_that_fit()
        room = budget - self.used - sum(summary_cost.values())
        self.share = max(
            MIN_SHARE, min(quote_max_tokens, room // max(len(chunks), 1) - max(overhead, default=0))
        )

    def fill(self) -> Plan:
        for t in self.topics:
            any(self.offer(i, self.share, reserve=self.reserve(t)) for i in self.members[t])
        for t in self.topics:
            if not self.topic_open(t) and not self.offer_line(t, self.reserve(t)):
                self.offer_line(t, 0)
        for i in list(self.plan.windows):
            self.extend(i, self.share)
        for t in self.topics:
            self.offer_summary(t, self.budget - self.used)
        for i in self.order:
            if i not in self.plan.windows:
                self.offer(i, self.share)
        for i in self.order:
            if i in self.plan.windows:
                self.extend(i, self.quote_max)
        for i in self.order:
            if i not in self.plan.windows:
                self.offer(i, self.quote_max)
        return self.plan

    def top_up(self, exact: Callable[[Plan], int]) -> None:
        """Offer what is left again against the exact count, in the fill's order (a quote for each
        topic without one, the other chunks, then the summaries), keeping each addition only if
        the whole text still fits."""
        for t in self.topics:
            if not self.topic_open(t):
                any(self.squeeze(i, exact) for i in self.members[t])
        for i in self.order:
            if i not in self.plan.windows:
                self.squeeze(i, exact)
        for t in self.topics:
            if self.offer_summary(t, self.budget - exact(self.plan)) and exact(self.plan) > self.budget:
                self.plan.undo()

    def squeeze(self, i: int, exact: Callable[[Plan], int]) -> bool:
        """Quote chunk ``i`` in the room the exact count leaves, lowering the window's cap by the
        overflow until the text fits or no line does."""
        cap = self.budget - exact(self.plan)
        while cap > 0 and self.offer(i, cap, room=cap):
            over = exact(self.plan) - self.budget
            if over <= 0:
                return True
            self.plan.undo()
            cap -= over
        return False

    # -- steps ---------------------------------------------------------------------------------

    def cost(self, i: int, window: tuple[int, int]) -> int:
        return sum(self.costs[i][window[0] : window[1] + 1])

    def topic_open(self, t: int) -> bool:
        return any(j in self.plan.windows for j in self.members[t])

    def cheapest(self, t: int) -> int | None:
        """The fewest tokens a first quote of topic ``t`` can take: its cheapest line that scores,
        with the quote's references and the topic's heading; None when no line is quotable."""
        costs = [
            self.overhead[i] + self.heading_cost + cost
            for i in self.members[t]
            for cost, score in zip(self.costs[i], self.scores[i], strict=True)
            if score > 0 and cost <= self.quote_max
        ]
        return min(costs, default=None)

    def first_quotes_that_fit(self) -> list[int]:
        """The topics, best first, whose cheapest first quotes the budget holds together with the
        better topics' (a topic whose quote does not fit after them is passed over)."""
        room, out = self.budget - self.used, []
        for t in self.topics:
            need = self.need[t]
            if need is not None and need <= room:
                room -= need
                out.append(t)
        return out

    def reserve(self, t: int) -> int:
        """The room kept for the first quotes of the served topics after ``t`` that have none yet."""
        return sum(self.need[u] or 0 for u in self.served if u > t and not self.topic_open(u))

    def blocked(self, i: int) -> list[bool]:
        """Per line of chunk ``i``: whether another quote of the same file holds it."""
        c = self.chunks[i]
        taken: set[int] = set()
        for j, (lo, hi) in self.plan.windows.items():
            other = self.chunks[j]
            if j != i and other.path == c.path:
                taken.update(range(other.start_line + lo, other.start_line + hi + 1))
        return [c.start_line + off in taken for off in range(len(self.costs[i]))]

    def window(self, i: int, cap: int) -> tuple[int, int] | None:
        """The best window of chunk ``i`` within ``cap`` tokens, off the lines other quotes hold."""
        return ev.best_window(self.scores[i], self.costs[i], cap, self.blocked(i))

    def extra(self, i: int) -> int:
        """What quoting chunk ``i`` costs besides its lines: its references, and its topic's heading."""
        return self.overhead[i] + (0 if self.topic_open(self.labels[i]) else self.heading_cost)

    def take(self, i: int, w: tuple[int, int]) -> None:
        self.used += self.extra(i) + self.cost(i, w)
        self.plan.set_window(i, w)

    def offer(self, i: int, share: int, *, room: int | None = None, reserve: int = 0) -> bool:
        """Quote chunk ``i`` within ``share`` tokens of lines if it fits what is left (``room``,
        by default the budget less what is used), less ``reserve``."""
        left = (self.budget - self.used if room is None else room) - reserve - self.extra(i)
        w = self.window(i, min(share, left))
        if w is None:
            return False
        self.take(i, w)
        return True

    def offer_line(self, t: int, reserve: int) -> bool:
        """The single most relevant line of topic ``t``'s chunks that fits what is left less
        ``reserve`` (at most ``quote_max_tokens``); ties go to the better-ranked chunk."""
        best: tuple[float, int, int] | None = None
        for i in self.members[t]:
            cap = min(self.quote_max, self.budget - self.used - reserve - self.extra(i))
            line = ev.best_line(self.scores[i], self.costs[i], cap, self.blocked(i))
            if line is not None and (best is None or self.scores[i][line] > best[0]):
                best = (float(self.scores[i][line]), i, line)
        if best is None:
            return False
        self.take(best[1], (best[2], best[2]))
        return True

    def offer_summary(self, t: int, room: int) -> bool:
        cost = self.summary_cost.get(t)
        if cost is None or t in self.plan.summaries or not self.topic_open(t) or cost > room:
            return False
        self.plan.add_summary(t)
        self.used += cost
        return True

    def extend(self, i: int, limit: int) -> None:
        """A better-scoring window of at most ``limit`` tokens for a quoted chunk, if the budget
        left allows it."""
        old = self.plan.windows[i]
        cap = min(limit, self.budget - self.used + self.cost(i, old))
        w = self.window(i, cap)
        s = self.scores[i]
        if w is not None and w != old and s[w[0] : w[1] + 1].sum() > s[old[0] : old[1] + 1].sum():
            self.used += self.cost(i, w) - self.cost(i, old)
            self.plan.set_window(i, w)
