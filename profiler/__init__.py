"""Per-operator reports: parse the harness's measurements (parse.py), join them with static costs
(MACs, bytes), the memory plan and the per-op numeric error against the float reference
(numerics.py) into report.json (report.py), and write it as Markdown, CSV, self-contained HTML
and PNG charts (outputs.py, html.py, charts.py, memory_plot.py); compare two reports
(compare.py) and summarize a sweep over boards (sweep.py).

The report schema (schema.json here) is the single definition every feature extends.
"""
SCHEMA_VERSION = "1.1"
