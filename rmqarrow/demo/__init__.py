"""``rmqarrow demo``: the whole loop on a generated broker store, told as it runs."""

from __future__ import annotations

from rmqarrow.demo.run import DemoResult, run_demo

__all__ = ["DemoResult", "run_demo"]
