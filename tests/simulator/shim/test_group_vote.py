"""The coordinator's protocol vote (``Group.select_protocol``) against the vote spelled out:
among the protocols every member supports, each member votes for the first it lists, the most
votes win and the first-voted wins a tie. With one common protocol the vote is not counted
(every member votes for it), so a static member's rejoin no longer asks every member."""

from __future__ import annotations

import random

import pytest

from simulator.shim.group import Group, Member


def _vote(members: list[Member]) -> str:
    common = set.intersection(*({name for name, _ in m.protocols} for m in members))
    votes: dict[str, int] = {}
    for member in members:
        choice = next(name for name, _ in member.protocols if name in common)
        votes[choice] = votes.get(choice, 0) + 1
    return max(votes, key=lambda name: (votes[name], -list(votes).index(name)))


@pytest.mark.parametrize("seed", range(40))
def test_the_vote_is_the_spelled_out_one(seed: int) -> None:
    rng = random.Random(seed)
    names = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    group = Group("g")
    members = []
    for index in range(rng.randint(1, 12)):
        listed = rng.sample(names, rng.randint(1, len(names)))
        if index == 0 or rng.random() < 0.8:  # mostly sharing one, so a common one exists
            listed = [*listed, names[0]] if names[0] not in listed else listed
        member = Member(f"m{index}", None, "c", 30_000, 10_000, "consumer",
                        tuple((name, b"") for name in listed))
        members.append(member)
        group.add(member, None)
    common = set.intersection(*({name for name, _ in m.protocols} for m in members))
    if not common:
        with pytest.raises(ValueError, match="supports none"):
            group.select_protocol()
        return
    assert group.select_protocol() == _vote(members)


def test_one_common_protocol_wins_without_asking_the_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    group = Group("g")
    for index in range(3):
        group.add(Member(f"m{index}", None, "c", 30_000, 10_000, "consumer",
                         (("x", b""), ("stream", b""))), None)
    group.add(Member("m3", None, "c", 30_000, 10_000, "consumer", (("stream", b""),)), None)
    asked: list[str] = []
    monkeypatch.setattr(Member, "vote", lambda self, candidates: asked.append(self.member_id))
    assert group.select_protocol() == "stream"
    assert asked == []
