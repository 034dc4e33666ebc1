"""The data form of a topology: round trips, validation errors, and the README's example."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from assignor.testing import topologies
from assignor.topology.data_form import (
    topology_from_data,
    topology_from_json,
    topology_to_data,
    topology_to_json,
)
from assignor.topology.model import Topology, TopologyError

ROOT = Path(__file__).resolve().parents[3]
#: the section moved from the README to its docs page; its examples still run here
README = ROOT / "docs" / "topology.md"


def valid() -> dict[str, Any]:
    return {
        "application_id": "shop",
        "subtopologies": [
            {"id": 0, "source_topics": ["orders"], "sink_topics": ["rep"]},
            {
                "id": 2,
                "source_topics": ["rep", "users"],
                "changelog_topics": ["shop-totals-changelog"],
                "stores": ["totals"],
            },
        ],
        "repartition_topics": {"rep": None},
        "copartition_groups": [["rep", "users"]],
    }


@given(topologies())
def test_builder_and_data_forms_give_equal_models(topology: Topology) -> None:
    data = topology_to_data(topology)
    assert topology_from_data(data) == topology
    assert topology_from_json(topology_to_json(topology)) == topology
    assert json.loads(json.dumps(data)) == data  # JSON-ready as it is
    # the informative node lists may be dropped
    without_nodes = copy.deepcopy(data)
    for sub in without_nodes["subtopologies"]:
        del sub["nodes"]
    assert topology_from_data(without_nodes) == topology


def test_data_form_derives_repartition_roles_and_keeps_id_gaps() -> None:
    topology = topology_from_data(valid())
    upstream, downstream = topology.subtopologies
    assert (upstream.id, downstream.id) == (0, 2)
    assert upstream.repartition_sink_topics == ("rep",)
    assert downstream.repartition_source_topics == ("rep",)
    assert downstream.external_source_topics == ("users",)
    assert topology.copartition_groups == (("rep", "users"),)
    assert topology_from_data(topology_to_data(topology)) == topology


def test_optional_fields_and_order_do_not_matter() -> None:
    data = valid()
    data["subtopologies"].reverse()
    data["subtopologies"][0]["source_topics"].reverse()
    assert topology_from_data(data) == topology_from_data(valid())
    # ...but the order Kafka registers source topics in is kept for sizing, and written back
    reordered = topology_from_data(data)
    assert reordered.subtopology(2).ordered_source_topics == ("users", "rep")
    assert topology_to_data(reordered)["subtopologies"][1]["source_topics"] == ["users", "rep"]
    # copartition groups are kept as declared: Kafka checks and merges them in that order
    data["copartition_groups"] = [["users", "rep"], ["rep"]]
    assert topology_from_data(data).copartition_groups == (("users", "rep"), ("rep",))
    minimal = {"application_id": "a", "subtopologies": [{"id": 0, "source_topics": ["t"]}]}
    assert topology_from_data(minimal).subtopology(0).sink_topics == ()


def mutate(path: str, value: Any) -> dict[str, Any]:
    """``valid()`` with the field at a dotted/indexed path replaced (``...`` deletes it)."""
    data = valid()
    keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    target: Any = data
    for key in keys[:-1]:
        target = target[key]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("application_id", "", "application_id: must be a non-empty string"),
        ("subtopologies", {}, "subtopologies: must be a list"),
        ("subtopologies.0.id", -1, "subtopologies[0].id: must be an integer"),
        ("subtopologies.0.id", True, "subtopologies[0].id: must be an integer"),
        ("subtopologies.1.id", 0, "subtopologies[1]: id 0 already belongs to subtopologies[0]"),
        ("subtopologies.0.source_topics", [], "subtopologies[0].source_topics: a subtopology"),
        ("subtopologies.0.source_topics", "orders", "subtopologies[0].source_topics: must be a"),
        ("subtopologies.1.source_topics.1", 7, "subtopologies[1].source_topics[1]: must be"),
        ("subtopologies.1.source_topics.1", "rep", "source_topics[1]: 'rep' is listed twice"),
        ("subtopologies.1.source_topics.1", "orders", "source topic 'orders' already belongs"),
        ("subtopologies.0.stores", ["totals"], "store 'totals' already belongs"),
        ("subtopologies.0.colour", "blue", "subtopologies[0]: unknown field(s) colour"),
        ("extra", 1, "topology: unknown field(s) extra"),
        ("repartition_topics", [], "repartition_topics: must map"),
        ("repartition_topics.rep", 0, "repartition_topics['rep']: count must be null"),
        ("repartition_topics.users", None, "must be a sink topic of one subtopology"),
        ("copartition_groups.0", [], "copartition_groups[0]: a copartition group names"),
        ("copartition_groups.0.0", "nope", "topic 'nope' is not a source topic"),
        ("copartition_groups", "rep", "copartition_groups: must be a list"),
    ],
)
def test_invalid_data_names_the_field(path: str, value: Any, message: str) -> None:
    with pytest.raises(TopologyError, match=re.escape(message)):
        topology_from_data(mutate(path, value))


def test_not_even_an_object() -> None:
    with pytest.raises(TopologyError, match="topology: must be an object, not list"):
        topology_from_data([])  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="topology is not valid JSON"):
        topology_from_json("{")


def test_copartition_of_enforced_repartition_topics_must_agree_in_data_too() -> None:
    data = {
        "application_id": "a",
        "subtopologies": [
            {"id": 0, "source_topics": ["in"], "sink_topics": ["r1", "r2"]},
            {"id": 1, "source_topics": ["r1", "r2"]},
        ],
        "repartition_topics": {"r1": 2, "r2": 3},
        "copartition_groups": [["r1", "r2"]],
    }
    with pytest.raises(TopologyError, match=r"same number of partitions: \[\{r1=2, r2=3\}\]"):
        topology_from_data(data)


def readme_snippets() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- section:topology -->", 1)[1].split("<!-- /section:topology -->")[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)


def test_readme_example_runs() -> None:
    snippets = readme_snippets()
    assert snippets, "the README's topology section must keep a runnable python example"
    for snippet in snippets:
        exec(compile(snippet, str(README), "exec"), {"__name__": "readme_example"})
