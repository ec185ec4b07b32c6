"""``rmqarrow demo``: the whole loop on a generated broker store, told as it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.demo.run import DemoResult, message_count, run_demo
    from rmqarrow.demo.workspace import DOCS_WORKSPACE, make_docs_workspace

__all__ = ["DOCS_WORKSPACE", "DemoResult", "make_docs_workspace", "message_count", "run_demo"]

# names load when first used: importing the package (as the command line does) is cheap
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "DOCS_WORKSPACE": "workspace",
        "DemoResult": "run",
        "make_docs_workspace": "workspace",
        "message_count": "run",
        "run_demo": "run",
    },
)
