"""Win rates of one answer mode over another from pairwise verdicts, with 95% bootstrap intervals.

A verdict is one (question, criterion) judged in both orders. A's score is 1 for a win, 0.5 for a tie, 0 for a loss,
averaged over the usable orders, so a verdict that flips with the order counts as a tie; order agreement (both orders
name the same winner) is how far the judge can be trusted. Intervals resample whole questions, since a question's
criteria are not independent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Verdict:
    """One criterion of one question, judged in both orders; winners are "a", "b", "tie" or None (unusable)."""

    question: int  # index into the question list
    criterion: str
    a_first: str | None  # the winner when A was shown as answer 1
    b_first: str | None  # the winner when B was shown as answer 1
    reasons: tuple[str, str] = ("", "")

    @property
    def agree(self) -> bool | None:
        """Whether both orders named the same winner (None when one of them was unusable)."""
        return None if self.a_first is None or self.b_first is None else self.a_first == self.b_first

    @property
    def score(self) -> float:
        """A's share of this pair (see the module docstring); both orders unusable count as a tie."""
        points = [{"a": 1.0, "tie": 0.5, "b": 0.0}[w] for w in (self.a_first, self.b_first) if w is not None]
        return sum(points) / len(points) if points else 0.5


@dataclass(frozen=True)
class WinRate:
    """One criterion (or "all") over the questions: A's win rate and the judge's order agreement."""

    criterion: str
    questions: int
    win_rate: float  # A's mean score over questions (ties and order flips count half)
    low: float  # 95% bootstrap interval over questions
    high: float
    agreement: float | None  # share of pairs where both orders named the same winner
    agreement_low: float | None
    agreement_high: float | None
    a_wins: int  # verdicts (one per order) for A, for B, ties, unusable
    b_wins: int
    ties: int
    unusable: int
    first_wins: float | None  # share of non-tie verdicts won by the answer shown first (0.5 = no position bias)


def _bootstrap(values: np.ndarray, groups: np.ndarray, n_groups: int, resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile interval of the mean when whole groups (questions) are resampled."""
    rng = np.random.default_rng(seed)
    sums = np.bincount(groups, weights=values, minlength=n_groups)
    counts = np.bincount(groups, minlength=n_groups).astype(float)
    picks = rng.integers(0, n_groups, size=(resamples, n_groups))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    means = means[np.isfinite(means)]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def win_rates(verdicts: Sequence[Verdict], *, resamples: int = 2000, seed: int = 0) -> list[WinRate]:
    """Per criterion, then "all" criteria together; intervals resample questions (their criteria together)."""
    names = list(dict.fromkeys(v.criterion for v in verdicts))
    out = []
    for name in names + ["all"]:
        vs = [v for v in verdicts if name in ("all", v.criterion)]
        qids = sorted({v.question for v in vs})
        group = np.array([qids.index(v.question) for v in vs])
        scores = np.array([v.score for v in vs])
        # "all": a question's score is its mean over criteria, so each question weighs the same.
        win = float(np.mean([scores[group == g].mean() for g in range(len(qids))]))
        low, high = _bootstrap(scores, group, len(qids), resamples, seed)
        judged = [k for k, v in enumerate(vs) if v.agree is not None]
        agreement = agreement_low = agreement_high = None
        if judged:
            agree = np.array([vs[k].agree for k in judged], dtype=float)
            agreement = float(agree.mean())
            agreement_low, agreement_high = _bootstrap(agree, group[judged], len(qids), resamples, seed)
        picks = [w for v in vs for w in (v.a_first, v.b_first)]
        firsts = [w == first for v in vs for w, first in ((v.a_first, "a"), (v.b_first, "b")) if w in ("a", "b")]
        a_wins, b_wins, ties, unusable = (picks.count(w) for w in ("a", "b", "tie", None))
        first_wins = float(np.mean(firsts)) if firsts else None
        rates = (win, low, high, agreement, agreement_low, agreement_high)
        out.append(WinRate(name, len(qids), *rates, a_wins, b_wins, ties, unusable, first_wins))
    return out
