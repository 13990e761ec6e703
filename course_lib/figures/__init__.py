"""Figures the lessons draw, one module per family (matplotlib).

Every function takes an optional ``ax`` and returns the Axes it drew on, so lessons can compose
figures and explorers can redraw into an existing Axes. Modules mirror the models they draw:
``graph`` (cost01: Gantt, dependency graph, slack, what-if), ``clocks`` (cost02), ``overlap``
(cost03), ``utilization`` (cost04), ``memory`` (cost05), ``straggler`` (cost06), ``collectives``
(cost07), ``scaling`` (cost08), ``profiling`` (cost09), ``stats`` (cost10: comparisons, power,
trace diffs), ``pipeline`` (schedule grids, Module 2), ``partition`` (pipe01: per-layer costs,
stage times and stage memory), ``one_f_one_b`` (pipe03: phases, stashes per stage, lifetimes;
its multi-panel figures return the Figure), ``accumulation`` (pipe06: token weights per rule,
mean loss against tokens, normalisation errors, step time against m), ``p2p`` (pipe09: program
grids with matched messages, wait-for graphs and cycles, send buffers owned by transfers),
``versions`` (pipe07: schedule grids coloured by weight version, loss under delayed gradients),
``imbalance`` (pipe08: the critical path outlined on a schedule grid, busy vs on-path time per
stage, a repartition's break-even), ``verification`` (pipe10: program grids with the
verifier's findings, peak stashes per stage against a bound, traces side by side);
``style`` holds what several families share (time units, text metrics).
"""
