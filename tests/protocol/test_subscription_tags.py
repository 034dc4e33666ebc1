"""The writer's client-tag checks: skipped for what cannot fail, made for what can."""

from __future__ import annotations

import pytest

from protocol._limits import MAX_STRING_BYTES, check_wire_str
from protocol._subscription_format import _encode_tags


@pytest.mark.parametrize(
    "tags",
    [
        {},
        {"zone": "a", "rack": ""},
        {"k" * (MAX_STRING_BYTES // 4): "v" * (MAX_STRING_BYTES // 4)},
        {"k" * (MAX_STRING_BYTES // 4 + 1): "\u00e9" * (MAX_STRING_BYTES // 2)},
        {"": "v"},
        {"k": "\u00e9" * (MAX_STRING_BYTES // 2 + 1)},
        {"\U0001f600" * (MAX_STRING_BYTES // 4 + 1): "v"},
        {"b": "1", "a": "2"},
    ],
)
def test_tags_pass_or_fail_as_each_checked_in_full(tags: dict[str, str]) -> None:
    """The outcome (sorted tags, or the same error) of checking every key and value."""
    try:
        for key, value in tags.items():
            check_wire_str(key, "client_tags key")
            check_wire_str(value, f"client_tags[{key!r}]", allow_empty=True)
    except ValueError as exc:
        with pytest.raises(ValueError) as raised:
            _encode_tags(tags)
        assert str(raised.value) == str(exc)
    else:
        assert list(_encode_tags(tags).items()) == sorted(tags.items())
