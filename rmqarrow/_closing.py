"""One context-manager protocol for everything rmqarrow opens: ``with`` closes it."""

from __future__ import annotations

from typing import Self

__all__ = ["Closing"]


class Closing:
    """Mixin: ``with obj:`` calls ``obj.close()`` on the way out, error or not."""

    def close(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
