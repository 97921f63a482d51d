"""Metric tables: each variant (a kernel, a setting, a side of a pair) against the first, every
metric and sweep point, tested (Welch on boot means, BH across the table), and the mmtests
layout of one metric. Pure, over orchestrator/stats.py. `vmbisect compare`'s tables and report,
the bisection report's culprit-against-parent figures, verify's table and explain's every
metric of the confirmation's boots are all these tables.

    cells       the table as data: VariantInfo, Cell, Row, Comparison (and its JSON)
    tabulate    runs -> the table: per-cell statistics, signed changes, tests, verdict lines
    block       one metric's block in the mmtests compare layout
"""
