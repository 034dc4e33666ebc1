"""Java's hash codes and the iteration orders of HashSet, HashMap and PriorityQueue (private)."""
