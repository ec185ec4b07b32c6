"""``rmqarrow demo``: the whole loop on a generated broker store, told as it runs."""

from __future__ import annotations

from rmqarrow.demo.run import DemoResult, message_count, run_demo
from rmqarrow.demo.workspace import DOCS_WORKSPACE, make_docs_workspace

__all__ = ["DOCS_WORKSPACE", "DemoResult", "make_docs_workspace", "message_count", "run_demo"]
