"""mkdocs hook: the package as installed, for mkdocstrings to read.

The wheel maps ``converters/`` to ``rmqarrow.converters``; the source tree keeps it beside
``rmqarrow/``.  Before the build this links the tree together as the installed package
(under ``build/docs-api/rmqarrow``, the same shape ``make lint`` type-checks), so the API
reference is read from the very files being edited.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "build" / "docs-api"


def link_package() -> Path:
    package = TARGET / "rmqarrow"
    shutil.rmtree(TARGET, ignore_errors=True)
    package.mkdir(parents=True)
    for entry in (ROOT / "rmqarrow").iterdir():
        (package / entry.name).symlink_to(entry)
    (package / "converters").symlink_to(ROOT / "converters")
    return TARGET


# At import, not in on_config: mkdocstrings resolves its search paths before the hooks'
# on_config runs, and drops a path that does not exist yet.
link_package()


def on_config(config: Any) -> Any:
    return config


# Docstrings cite names with Sphinx roles (:func:`x`, :class:`~a.B`); Markdown renders the
# role as text before the code span.  Keep the code span, shortened as ``~`` asks.
_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj|const):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"<code>{name.rsplit('.', 1)[-1] if match.group(1) else name}</code>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return _ROLE.sub(_code, html)
