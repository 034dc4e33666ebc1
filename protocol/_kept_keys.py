"""The base of ids that keep their hash (and other keys) in slots, computed once per instance.

An id whose hash lives in a slot, as the bound ``int.__index__`` of the value, can install that
slot's descriptor as ``__hash__``: ``hash(id)`` then reads and calls it with no Python frame.
There is no fallback for an empty slot, so every way pydantic makes an instance without
``__init__`` (construction, copies, unpickling) must compute the keys too: that is this class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel


class KeptKeys(BaseModel):
    """Computes a subclass's kept keys on every instance pydantic makes (``keep_keys``)."""

    __slots__ = ()

    def keep_keys(self) -> None:
        """Set the subclass's key slots from its fields."""
        raise NotImplementedError

    def model_post_init(self, context: Any, /) -> None:
        self.keep_keys()

    # pydantic's copies (keys computed after ``update``) and unpickling bypass validation
    def __copy__(self) -> Self:
        copy = super().__copy__()
        copy.keep_keys()
        return copy

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copy = super().__deepcopy__(memo)
        copy.keep_keys()
        return copy

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self.keep_keys()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copy = super().model_copy(update=update, deep=deep)
        copy.keep_keys()
        return copy
