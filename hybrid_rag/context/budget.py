"""Filling a token budget with quotes and summaries, by priority (the ContextBuilder's step 3).

``Filler.fill`` plans on token estimates (per-line counts plus fixed overheads), in this order:

1. one quote a topic, best topic first: its best-ranked chunk whose most relevant lines fit an
   equal share of the budget, keeping room for the cheapest first quote of each later topic that
   the budget can hold after the better topics' (``served``: at a small budget the best topic's
   evidence comes first, and a later topic that cannot fit takes no room from it);
   a topic none of whose chunks fits then gets its single most relevant statement that fits
   what is left (at most ``quote_max_tokens``), so that one topic's long line cannot take the
   room of the others' first quotes; then the first quotes grow back to the share where room
   allows. A topic's first quote holds a whole statement (a sentence, a code line or a
   bracketed code statement) scoring at least ``FIRST_QUOTE_SHARE`` of its best one
   (``first_floor``): a topic opens with the lines that answer, never with a cheap line that
   matches less while its answer fits the budget, nor with the tail of a sentence;
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
from hybrid_rag.lang.windows import best_window
from hybrid_rag.types import ScoredChunk

MIN_SHARE = 40  # tokens: the smallest first-pass share of the budget a quote is offered
FIRST_QUOTE_SHARE = 0.5  # a topic's first quote holds a statement this close to its best one
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
        *,
        reach: Sequence[Sequence[int]] | None = None,
        lead: Sequence[Sequence[float]] | None = None,
        summary_now: Callable[[int, Plan], int | None] | None = None,
        note_reserve: int = NOTE_RESERVE,
    ) -> None:
        """``note_reserve``: tokens kept for the notes the fill adds (0 when they must shrink to
        let a quote in: ``context/notes.py``)."""
        self.chunks = chunks
        self.scores = scores
        self.labels = labels.tolist()
        self.costs = line_costs
        self.overhead = overhead
        self.heading_cost = heading_cost
        self.summary_cost = summary_cost
        self.budget = budget
        self.quote_max = quote_max_tokens
        self.reach: list[list[int]] = []
        self.lead: list[list[float]] = []
        for i in range(len(chunks)):
            n = len(line_costs[i])
            self.reach.append(list(reach[i]) if reach is not None else list(range(n)))
            self.lead.append(list(lead[i]) if lead is not None else [float(x) for x in scores[i]])
            self.whole(i)
        self.summary_now = summary_now
        self.topics = sorted(set(self.labels))
        self.members = {t: [i for i, label in enumerate(self.labels) if label == t] for t in self.topics}
        rounds = max((len(m) for m in self.members.values()), default=0)
        self.order = [
            self.members[t][r] for r in range(rounds) for t in self.topics if r < len(self.members[t])
        ]
        self.plan = Plan()
        self.floor = {t: self.first_floor(t) for t in self.topics}
        self.need = {t: self.cheapest(t) for t in self.topics}  # a first quote's fewest tokens
        self.used = fixed_cost + note_reserve
        self.served = self.first_quotes_that_fit()
        room = budget - self.used - sum(summary_cost.values())
        self.share = max(
            MIN_SHARE, min(quote_max_tokens, room // max(len(chunks), 1) - max(overhead, default=0))
        )

    def fill(self) -> Plan:
        for t in self.topics:
            if not any(self.offer(i, self.share, reserve=self.reserve(t)) for i in self.members[t]):
                self.offer_line(t, self.reserve(t))
        for t in self.topics:
            if not self.topic_open(t):
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

    def whole(self, i: int) -> None:
        """Frees chunk ``i``'s statements longer than ``quote_max_tokens`` (no quote can hold one
        whole): each of their lines may then be quoted alone, as a statement of the same score."""
        reach, lead = self.reach[i], self.lead[i]
        for j, r in enumerate(list(reach)):
            if r > j and self.cost(i, (j, r)) > self.quote_max:
                for k in range(j, r + 1):
                    reach[k] = min(reach[k], k) if k > j else k
                    lead[k] = max(lead[k], lead[j])

    def first_floor(self, t: int) -> float:
        """The least lead a first quote of topic ``t`` holds: ``FIRST_QUOTE_SHARE`` of its best
        statement that a quote can hold (so a topic opens with its evidence, not a line of it
        that happens to be cheap)."""
        best = max(
            (
                self.lead[i][j]
                for i in self.members[t]
                for j in range(len(self.costs[i]))
                if self.cost(i, (j, self.reach[i][j])) <= self.quote_max
            ),
            default=0.0,
        )
        return FIRST_QUOTE_SHARE * best

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
            for j, lead in enumerate(self.lead[i])
            if lead > 0
            and lead >= self.floor[t]
            and (cost := self.cost(i, (j, self.reach[i][j]))) <= self.quote_max
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
        t = self.labels[i]
        least = 0.0 if self.topic_open(t) else self.floor[t]
        return best_window(
            self.scores[i],
            self.costs[i],
            cap,
            self.blocked(i),
            reach=self.reach[i],
            lead=self.lead[i],
            least=least,
        )

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
        """The single most relevant statement of topic ``t``'s chunks (``evidence.best_statement``:
        a line, or the lines one sentence or statement spans) that fits what is left less
        ``reserve`` (at most ``quote_max_tokens``); ties go to the better-ranked chunk."""
        best: tuple[float, int, tuple[int, int]] | None = None
        for i in self.members[t]:
            cap = min(self.quote_max, self.budget - self.used - reserve - self.extra(i))
            w = ev.best_statement(
                self.lead[i], self.costs[i], cap, self.blocked(i), reach=self.reach[i], least=self.floor[t]
            )
            if w is not None and (best is None or self.lead[i][w[0]] > best[0]):
                best = (self.lead[i][w[0]], i, w)
        if best is None:
            return False
        self.take(best[1], best[2])
        return True

    def offer_summary(self, t: int, room: int) -> bool:
        """Show topic ``t``'s summary if it fits ``room``: its cost as the quotes now stand
        (``summary_now``: a summary drawn from its own quotes), else the estimate."""
        cost = self.summary_cost.get(t) if self.summary_now is None else self.summary_now(t, self.plan)
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
