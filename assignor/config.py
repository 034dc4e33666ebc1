"""The task assignors' configuration, under Kafka Streams' own config names.

Users coming from Kafka Streams already know ``num.standby.replicas`` and friends, so those are
the keys (``AssignorConfig.model_validate({"num.standby.replicas": 1})``); the snake_case field
names work too. Defaults and bounds are Kafka's (``StreamsConfig`` of the pinned release); a
bad value fails here, at configuration time, with the config name in the message, never deep
inside a rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping
from difflib import get_close_matches
from typing import Annotated, Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from protocol.ids import INT32_MAX, INT64_MAX

#: ``StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_LIST_SIZE`` and the tag length limits.
MAX_RACK_AWARE_TAGS: Final = 5
MAX_TAG_KEY_LENGTH: Final = 20
MAX_TAG_VALUE_LENGTH: Final = 30
#: Kafka's prefix for a member's own tags: ``client.tag.zone=eu-1a``.
CLIENT_TAG_PREFIX: Final = "client.tag."


class UnknownConfigError(ValueError):
    """A config name this library does not know; ``name`` is the offending key."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


TaskAssignorName = Literal["high_availability", "legacy_sticky", "fallback_prior"]
_JAVA_ASSIGNOR_NAMES: Final[Mapping[str, TaskAssignorName]] = {
    "HighAvailabilityTaskAssignor": "high_availability",
    "LegacyStickyTaskAssignor": "legacy_sticky",
    "StickyTaskAssignor": "legacy_sticky",
    "FallbackPriorTaskAssignor": "fallback_prior",
}


class AssignorConfig(BaseModel):
    """What the leader's task assignor needs to know; immutable once built."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    num_standby_replicas: Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)] = Field(
        default=0, alias="num.standby.replicas"
    )
    acceptable_recovery_lag: Annotated[int, Field(strict=True, ge=0, le=INT64_MAX)] = Field(
        default=10_000, alias="acceptable.recovery.lag"
    )
    max_warmup_replicas: Annotated[int, Field(strict=True, ge=1, le=INT32_MAX)] = Field(
        default=2, alias="max.warmup.replicas"
    )
    probing_rebalance_interval_ms: Annotated[
        int, Field(strict=True, ge=60_000, le=INT64_MAX)
    ] = Field(default=600_000, alias="probing.rebalance.interval.ms")
    rack_aware_assignment_tags: tuple[str, ...] = Field(
        default=(), alias="rack.aware.assignment.tags"
    )
    #: Only ``none``: the traffic-cost optimiser of KIP-925 is not implemented (see README).
    rack_aware_assignment_strategy: Literal["none"] = Field(
        default="none", alias="rack.aware.assignment.strategy"
    )
    rack_aware_assignment_traffic_cost: int | None = Field(
        default=None, alias="rack.aware.assignment.traffic_cost"
    )
    rack_aware_assignment_non_overlap_cost: int | None = Field(
        default=None, alias="rack.aware.assignment.non_overlap_cost"
    )
    #: Which task assignor the leader runs (Kafka's internal ``internal.task.assignor.class``).
    task_assignor: TaskAssignorName = Field(
        default="high_availability", alias="internal.task.assignor.class"
    )
    #: This member's own tags (``client.tag.<key>`` entries), sent in its subscription.
    client_tags: Mapping[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_names(cls, data: Any) -> Any:
        """A misspelt name fails with the names it may have meant, not pydantic's "extra inputs"."""
        if not isinstance(data, Mapping):
            return data
        known = cls.config_names()
        for key in data:
            if not isinstance(key, str):
                raise ValueError(f"config names are strings, got {key!r}")
            if key in known or key.startswith(CLIENT_TAG_PREFIX):
                continue
            close = get_close_matches(key, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            kafka_names = ", ".join(sorted(n for n in known if "." in n))
            raise UnknownConfigError(
                key,
                f"unknown config {key!r}{hint} Valid names: {kafka_names}, and "
                f"{CLIENT_TAG_PREFIX}<key> for this member's tags"
            )
        return data

    @classmethod
    def config_names(cls) -> frozenset[str]:
        """Every accepted key: Kafka Streams' names and the snake_case field names."""
        names = set(cls.model_fields)
        names.update(f.alias for f in cls.model_fields.values() if f.alias)
        return frozenset(names)

    @model_validator(mode="before")
    @classmethod
    def _collect_client_tags(cls, data: Any) -> Any:
        """Fold Kafka-style ``client.tag.<key>`` entries into ``client_tags``."""
        if not isinstance(data, Mapping):
            return data
        tags = {
            key[len(CLIENT_TAG_PREFIX) :]: value
            for key, value in data.items()
            if isinstance(key, str) and key.startswith(CLIENT_TAG_PREFIX)
        }
        if not tags:
            return data
        rest = {k: v for k, v in data.items() if not str(k).startswith(CLIENT_TAG_PREFIX)}
        merged = dict(rest.get("client_tags", {}))
        merged.update(tags)
        rest["client_tags"] = merged
        return rest

    @field_validator("rack_aware_assignment_tags", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        """Kafka's LIST type also reads a comma-separated string."""
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        return value

    @field_validator("rack_aware_assignment_tags")
    @classmethod
    def _at_most_five(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) > MAX_RACK_AWARE_TAGS:
            raise ValueError(
                f"rack.aware.assignment.tags lists {len(value)} tags; at most "
                f"{MAX_RACK_AWARE_TAGS} are allowed"
            )
        return value

    @field_validator("task_assignor", mode="before")
    @classmethod
    def _java_class_names(cls, value: Any) -> Any:
        """Accept Kafka's class names (simple or fully qualified) for the assignor."""
        if isinstance(value, str):
            simple = value.rsplit(".", 1)[-1]
            return _JAVA_ASSIGNOR_NAMES.get(simple, value)
        return value

    @field_validator("client_tags")
    @classmethod
    def _tag_limits(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        if len(value) > MAX_RACK_AWARE_TAGS:
            raise ValueError(
                f"at most {MAX_RACK_AWARE_TAGS} client tags can be set with the "
                f"{CLIENT_TAG_PREFIX!r} prefix, got {len(value)}"
            )
        for key, tag_value in value.items():
            if len(key) > MAX_TAG_KEY_LENGTH:
                raise ValueError(
                    f"client tag key {key!r} exceeds the maximum length of {MAX_TAG_KEY_LENGTH}"
                )
            if len(tag_value) > MAX_TAG_VALUE_LENGTH:
                raise ValueError(
                    f"client tag value {tag_value!r} (key {key!r}) exceeds the maximum length "
                    f"of {MAX_TAG_VALUE_LENGTH}"
                )
        return dict(value)

    @model_validator(mode="after")
    def _tags_are_declared(self) -> Self:
        """Kafka rejects a rack-awareness tag the member does not itself carry.

        Only checked when this config declares client tags at all: a leader-only config (no
        ``client.tag.*``) may name the tags its members carry.
        """
        if self.client_tags:
            missing = [t for t in self.rack_aware_assignment_tags if t not in self.client_tags]
            if missing:
                raise ValueError(
                    f"rack.aware.assignment.tags contains {missing} which have no corresponding "
                    f"tag set via the {CLIENT_TAG_PREFIX!r} prefix"
                )
        return self

    def to_kafka(self) -> dict[str, Any]:
        """The config under Kafka's names, e.g. to hand to the Java reference."""
        return self.model_dump(by_alias=True, exclude={"client_tags"})
