"""What the group leader decides: topology, tasks, task assignment, and the aiokafka adapter."""
