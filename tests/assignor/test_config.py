"""AssignorConfig: Kafka's names, defaults and bounds, and errors that name the config."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assignor.config import AssignorConfig


def test_defaults_are_kafkas() -> None:
    config = AssignorConfig()
    assert config.num_standby_replicas == 0
    assert config.acceptable_recovery_lag == 10_000
    assert config.max_warmup_replicas == 2
    assert config.probing_rebalance_interval_ms == 600_000
    assert config.rack_aware_assignment_tags == ()
    assert config.task_assignor == "high_availability"


def test_kafka_names_and_field_names_both_work() -> None:
    by_kafka = AssignorConfig.model_validate(
        {"num.standby.replicas": 2, "acceptable.recovery.lag": 5, "max.warmup.replicas": 4}
    )
    by_field = AssignorConfig(
        num_standby_replicas=2, acceptable_recovery_lag=5, max_warmup_replicas=4
    )
    assert by_kafka == by_field
    assert by_kafka.to_kafka()["num.standby.replicas"] == 2


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max.warmup.replicas", 0),
        ("probing.rebalance.interval.ms", 59_999),
        ("acceptable.recovery.lag", -1),
        ("num.standby.replicas", -1),
        ("rack.aware.assignment.tags", ["a", "b", "c", "d", "e", "f"]),
        ("rack.aware.assignment.strategy", "min_traffic"),
        ("internal.task.assignor.class", "RoundRobin"),
    ],
)
def test_bad_values_fail_naming_the_config(key: str, value: object) -> None:
    with pytest.raises(ValidationError) as raised:
        AssignorConfig.model_validate({key: value})
    assert key in str(raised.value)


def test_bounds_are_inclusive() -> None:
    config = AssignorConfig.model_validate(
        {"max.warmup.replicas": 1, "probing.rebalance.interval.ms": 60_000}
    )
    assert (config.max_warmup_replicas, config.probing_rebalance_interval_ms) == (1, 60_000)


def test_unknown_keys_are_rejected() -> None:
    with pytest.raises(ValidationError, match=r"num\.standby\.replica"):
        AssignorConfig.model_validate({"num.standby.replica": 1})


def test_list_config_reads_a_comma_separated_string() -> None:
    config = AssignorConfig.model_validate({"rack.aware.assignment.tags": "zone, cluster"})
    assert config.rack_aware_assignment_tags == ("zone", "cluster")


def test_client_tags_come_from_the_prefix_and_must_cover_rack_tags() -> None:
    config = AssignorConfig.model_validate(
        {
            "client.tag.zone": "eu-1a",
            "client.tag.cluster": "k8s-1",
            "rack.aware.assignment.tags": ["zone"],
        }
    )
    assert config.client_tags == {"zone": "eu-1a", "cluster": "k8s-1"}
    assert "client_tags" not in config.to_kafka()
    with pytest.raises(ValidationError, match="no corresponding tag"):
        AssignorConfig.model_validate(
            {"client.tag.zone": "eu-1a", "rack.aware.assignment.tags": ["zone", "rack"]}
        )


@pytest.mark.parametrize(
    "tags",
    [
        {f"client.tag.k{i}": "v" for i in range(6)},
        {"client.tag." + "k" * 21: "v"},
        {"client.tag.zone": "v" * 31},
    ],
)
def test_client_tag_limits(tags: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        AssignorConfig.model_validate(tags)


def test_java_assignor_class_names_are_understood() -> None:
    qualified = "org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor"
    config = AssignorConfig.model_validate({"internal.task.assignor.class": qualified})
    assert config.task_assignor == "legacy_sticky"
    assert AssignorConfig.model_validate(
        {"internal.task.assignor.class": "FallbackPriorTaskAssignor"}
    ).task_assignor == "fallback_prior"


def test_config_is_immutable() -> None:
    config = AssignorConfig()
    with pytest.raises(ValidationError):
        config.num_standby_replicas = 3  # type: ignore[misc]


def test_a_misspelt_name_gets_the_name_it_meant() -> None:
    with pytest.raises(ValidationError) as failure:
        AssignorConfig.model_validate({"num.standby.replica": 1})
    message = str(failure.value)
    assert "unknown config 'num.standby.replica'; did you mean 'num.standby.replicas'?" in message
    assert "Extra inputs are not permitted" not in message
    assert "acceptable.recovery.lag" in message  # the valid names are listed


def test_another_systems_config_is_named_as_unknown() -> None:
    with pytest.raises(ValidationError, match=r"unknown config 'session.timeout.ms'\. Valid"):
        AssignorConfig.model_validate({"session.timeout.ms": 10_000})


@pytest.mark.parametrize(
    "name", ["num.standby.replicas", "acceptable.recovery.lag", "max.warmup.replicas"]
)
def test_a_string_where_a_number_belongs_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="valid integer"):
        AssignorConfig.model_validate({name: "1"})


def test_every_documented_name_is_accepted() -> None:
    names = AssignorConfig.config_names()
    assert {"num.standby.replicas", "num_standby_replicas", "client_tags"} <= names
    config = AssignorConfig.model_validate({"num.standby.replicas": 1, "client.tag.zone": "a"})
    assert config.client_tags == {"zone": "a"}
