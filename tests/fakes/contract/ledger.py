"""What the contract layer saw in this process: counts, operations used, and every violation.

One ledger per process (each pytest-xdist worker has its own; the plugin adds them up at the end).
The fake forge serves from a thread of the test process, so the requests a test causes — directly,
or through the `forgebot` processes it started — are recorded here while that test runs.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Ledger:
    requests_checked: int = 0
    requests_failed: int = 0
    requests_excused: int = 0  # to a wrong forge address, in a test that sets one on purpose
    responses_checked: int = 0
    responses_failed: int = 0
    responses_unchecked: int = 0  # the operation has no schema or example for that answer
    operations: Counter[str] = field(default_factory=Counter)  # "forge METHOD template operationId"
    unchecked: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    webhooks: Counter[str] = field(default_factory=Counter)  # "forge event-action result" → deliveries
    lock: threading.Lock = field(default_factory=threading.Lock)

    def used(self, key: str) -> None:
        with self.lock:
            self.operations[key] += 1

    def request(self, problems: list[str]) -> None:
        with self.lock:
            self.requests_checked += 1
            self.requests_failed += bool(problems)
            self.violations.extend(problems)

    def response(self, problems: list[str], *, unchecked: str = "") -> None:
        with self.lock:
            if unchecked:
                self.responses_unchecked += 1
                self.unchecked[unchecked] += 1
                return
            self.responses_checked += 1
            self.responses_failed += bool(problems)
            self.violations.extend(problems)

    def webhook(self, event: str, result: str) -> None:
        with self.lock:
            self.webhooks[f"{event} {result}"] += 1

    def excuse(self, mark: int, kinds: tuple[str, ...]) -> None:
        """Drop the violations since `mark` that are of `kinds` (each one request's), counted as excused."""
        with self.lock:
            kept = [v for v in self.violations[mark:] if not any(k in v for k in kinds)]
            excused = len(self.violations) - mark - len(kept)
            self.violations[mark:] = kept
            self.requests_failed -= excused
            self.requests_excused += excused

    def since(self, mark: int) -> list[str]:
        with self.lock:
            return self.violations[mark:]

    def summary(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests_checked": self.requests_checked, "requests_failed": self.requests_failed,
                "requests_excused": self.requests_excused,
                "responses_checked": self.responses_checked, "responses_failed": self.responses_failed,
                "responses_unchecked": self.responses_unchecked, "operations": dict(self.operations),
                "unchecked": dict(self.unchecked), "violations": list(self.violations),
                "webhooks": dict(self.webhooks),
            }


LEDGER = Ledger()
