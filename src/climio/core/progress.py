"""Progress bars for long runs: one bar, on rank 0, on stderr, only when stderr is a terminal and the run
has lasted a few seconds (so logs, pipes and short jobs stay clean); tqdm draws it."""

from __future__ import annotations

import sys
from typing import Any


def bar(total: float, unit: str, desc: str, show: bool) -> Any:
    """A tqdm bar of ``total`` ``unit``s (scaled: kB, MB, ...); ``show=False`` (other ranks) gives a silent one."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=True, desc=desc, disable=None if show else True,
                file=sys.stderr, mininterval=1.0, delay=3.0)
