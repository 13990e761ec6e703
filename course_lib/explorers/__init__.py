"""ipywidgets explorers built on the course's models: one module per lesson's explorer.

``base`` is the shared Explorer (controls -> model -> figure + metrics, < 100 ms per change);
``critical_path`` (cost01), ``clock_alignment`` (cost02), ``overlap`` (cost03), ``utilization``
(cost04), ``activation_memory`` (cost05), ``straggler`` (cost06), ``collectives`` (cost07),
``scaling`` (cost08), ``profiling`` (cost09), ``triage`` (cost10), ``partition`` (pipe01),
``fill_drain`` (pipe02), ``one_f_one_b`` (pipe03), ``interleaved`` (pipe04), ``remat``
(pipe05), ``accumulation`` (pipe06), ``versions`` (pipe07), ``imbalance`` (pipe08),
``p2p`` (pipe09), ``verification`` (pipe10).
"""
