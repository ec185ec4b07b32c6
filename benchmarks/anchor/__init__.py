"""RocketMQ's own Java ``IndexFile`` next to rmqarrow, on one input, in one run.

The harness behind ``benchmarks/bench_anchor.py`` (``make bench-anchor``):

- :mod:`anchor._setup` finds the JDK and RocketMQ's code (a release's rocketmq-store jar,
  fetched by Maven into a cache, or a source checkout) and compiles this folder's Java
  driver against it (with the checkout: RocketMQ's ``IndexFile`` unchanged, with the
  stand-ins in ``java/``);
- :mod:`anchor._input` generates the keys, offsets, times and lookups both sides read;
- :mod:`anchor._sides` runs and times each side;
- :mod:`anchor._checks` proves the two index files and all answers are the same;
- :mod:`anchor._record` prints the side-by-side table and writes the JSON run record.

See README.md in this folder for what is measured and how to run it.
"""
