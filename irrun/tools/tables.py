"""Plain-text tables for the debugging tools' reports."""
from __future__ import annotations


def text_table(rows, right=frozenset()) -> list[str]:
    if len(rows) == 1:
        return ["  (none)"]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                             for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
