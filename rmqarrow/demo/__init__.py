"""``rmqarrow demo``: the whole loop on a generated broker store, told as it runs."""

from __future__ import annotations

from rmqarrow.demo.run import DemoResult, message_count, run_demo

__all__ = ["DemoResult", "message_count", "run_demo"]
