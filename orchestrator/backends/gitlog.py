"""Pure parsing of `git bisect` output."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TESTING = re.compile(r"Bisecting: (\d+) revisions? left to test after this \(roughly (\d+) steps?\)")
_FOUND = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.MULTILINE)
_ONLY_SKIPPED = "There are only 'skip'ped commits left to test."
_SHA = re.compile(r"^([0-9a-f]{40})\b", re.MULTILINE)


@dataclass(frozen=True)
class BisectState:
    """`testing`: the next commit is BISECT_HEAD; `found`: `culprit`; `only_skipped`: the
    first bad commit is one of `candidates`, which could not be tested."""

    kind: str
    revisions_left: int = 0
    steps_left: int = 0
    culprit: str = ""
    candidates: tuple[str, ...] = ()


def parse_bisect_output(text: str) -> BisectState:
    found = _FOUND.search(text)
    if found:
        return BisectState("found", culprit=found.group(1))
    if _ONLY_SKIPPED in text:
        after = text.split(_ONLY_SKIPPED, 1)[1]
        return BisectState("only_skipped", candidates=tuple(_SHA.findall(after)))
    testing = _TESTING.search(text)
    if testing:
        return BisectState("testing", int(testing.group(1)), int(testing.group(2)))
    raise ValueError(f"unrecognised git bisect output: {text.strip()[:300]!r}")
