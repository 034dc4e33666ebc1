"""Frozen pydantic models built without validation, for values a caller has already checked.

pydantic keeps a model's state in four slots (its ``__dict__``, the set of given fields, extras and
private attributes); setting them through the slot descriptors gives a frozen instance that
compares, hashes and dumps like a validated one, several times cheaper than ``model_construct``'s
generic bookkeeping. The decoders build one message per member and the planner one id per task,
so this is where a large group's leader spends less. ``protocol.ids`` checks the layout at import
against validated instances and falls back to ``model_construct`` should pydantic change it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

new_instance = object.__new__
_slots = vars(BaseModel)
set_model_dict = _slots["__dict__"].__set__
set_fields_set = _slots["__pydantic_fields_set__"].__set__
set_extra = _slots["__pydantic_extra__"].__set__
set_private = _slots["__pydantic_private__"].__set__

_Model = TypeVar("_Model", bound=BaseModel)
#: Per model class, the set of all its field names that :func:`trusted_model` shares among its
#: instances (a set per message was an allocation and a tracked object per member). pydantic
#: copies it before changing it (``model_copy(update=...)``: so not a frozenset).
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}


def trusted_model(
    cls: type[_Model], values: dict[str, Any], *, fields_set: set[str] | None = None
) -> _Model:
    """``cls.model_construct(**values)`` for checked values that name every field of ``cls``
    (so there are no defaults to fill) and a model without private attributes: the decoder's
    per-member messages, without pydantic's generic bookkeeping. ``values`` becomes the
    instance's ``__dict__``; the caller must not keep it. ``fields_set``: the fields a
    validated instance would count as given (default: those in ``values``)."""
    model = new_instance(cls)
    set_model_dict(model, values)
    if fields_set is None:
        names = _ALL_FIELDS.get(cls) or _ALL_FIELDS.setdefault(cls, set(cls.model_fields))
        fields_set = names if len(values) == len(names) else set(values)
    set_fields_set(model, fields_set)
    set_extra(model, None)
    set_private(model, None)
    return model


def all_fields_set(cls: type[BaseModel]) -> set[str]:
    """The set of all of ``cls``'s field names that :func:`trusted_model` gives its instances,
    for a reader that inlines ``trusted_model``'s steps in its hot path."""
    return _ALL_FIELDS.get(cls) or _ALL_FIELDS.setdefault(cls, set(cls.model_fields))
