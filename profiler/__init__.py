"""Per-operator reports: parse the harness's measurements, join them with static costs (MACs,
bytes) and the memory plan, and write report.json / report.md and the terminal table.

The report schema (schema.json here) is the single definition every feature extends.
"""
SCHEMA_VERSION = "1.0"
