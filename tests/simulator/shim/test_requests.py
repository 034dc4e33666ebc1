"""The request and answer values build exactly as the dataclasses they are declared as.

Five of them get an ``__init__`` that stores through the slots' descriptors
(``requests._stored_by_slots``); each is compared with a plain frozen slotted dataclass of the
same fields: signature, the values stored from positional, keyword and default arguments,
equality, hash, repr, immutability, and the errors for a missing or unknown argument.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from simulator.shim import requests

FAST = [requests.JoinGroupRequest, requests.JoinGroupResponse, requests.SyncGroupRequest,
        requests.SyncGroupResponse, requests.HeartbeatRequest]


def _plain(cls: type[Any]) -> type[Any]:
    spec = [(f.name, f.type, f.default) if f.default is not dataclasses.MISSING
            else (f.name, f.type) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True, slots=True)


def _outcome(build: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    try:
        return "ok", repr(build(*args, **kwargs))
    except TypeError as error:
        return "TypeError", str(error).replace(".__init__", "")


@pytest.mark.parametrize("cls", FAST, ids=lambda cls: cls.__name__)
def test_a_stored_by_slots_value_is_the_dataclass_it_declares(cls: type[Any]) -> None:
    plain = _plain(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(plain))
    names = [f.name for f in dataclasses.fields(cls)]
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    values = [f"v{i}" for i in range(len(names))]
    for count in range(len(required), len(names) + 1):
        assert _outcome(cls, *values[:count]) == _outcome(plain, *values[:count])
        keywords = dict(zip(names[:count], values[:count], strict=True))
        assert _outcome(cls, **keywords) == _outcome(plain, **keywords)
    assert _outcome(cls, *values[:len(required) - 1]) == _outcome(
        plain, *values[:len(required) - 1])
    assert _outcome(cls, *values, unknown=1) == _outcome(plain, *values, unknown=1)
    one, two = cls(*values), cls(*values)
    assert one == two and hash(one) == hash(two) and one is not two
    assert [getattr(one, name) for name in names] == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.__setattr__(names[0], "changed")
