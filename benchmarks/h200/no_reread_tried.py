"""GPU machine, an experiment: the TMA attention kernel with warp 0's walk never reading the flags again for a
key block whose flags were not out when it read them (such a block is computed, as one whose flags are not out
yet always may be). attention_forms.py's table with the change: against its plain run, what the walk's
synchronous re-reads cost (and what the blocks computed for want of them cost).

    python3 benchmarks/h200/no_reread_tried.py --dtypes bfloat16
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import attention_forms

from zyx_dist.codegen import attention_flags

_walk = attention_flags.InlineSkips.walk
REREAD = "if (!zd_fresh && !((zd_kv >> zd_p) & 1u)) {"


def _walk_once(self, steps: str, pad: str) -> str:
    code = _walk(self, steps, pad)
    assert self.rule is None or REREAD in code
    return code.replace(REREAD, "if (false) {")


attention_flags.InlineSkips.walk = _walk_once

if __name__ == "__main__":
    attention_forms.main()
