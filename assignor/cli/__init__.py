"""``python -m assignor``: the leader's pipeline over a group described in a JSON file."""
