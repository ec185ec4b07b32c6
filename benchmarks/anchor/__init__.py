"""RocketMQ's own Java ``IndexFile`` next to rmqarrow, on one input, in one run.

The harness behind ``benchmarks/bench_anchor.py`` (``make bench-anchor ROCKETMQ=...``):

- :mod:`anchor._setup` finds the RocketMQ checkout and the JDK, and compiles RocketMQ's
  ``IndexFile`` unchanged with this folder's Java stand-ins and driver (``java/``);
- :mod:`anchor._input` generates the keys, offsets, times and lookups both sides read;
- :mod:`anchor._sides` runs and times each side;
- :mod:`anchor._checks` proves the two index files and all answers are the same;
- :mod:`anchor._record` prints the side-by-side table and writes the JSON run record.

See README.md in this folder for what is measured and how to run it.
"""
