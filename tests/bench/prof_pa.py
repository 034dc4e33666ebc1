import cProfile, pstats, sys, time
sys.path.insert(0, ".")
from simulator.engine import replay
from simulator.families import generate
sc = generate("partitions_added", {"partitions": 190, "processes": 74, "recovery_lag": 10000, "standbys": 1, "static": False, "threads": 4, "to_partitions": 305, "warmups": 2, "assignor": "high_availability"}, 437670890)
pr = cProfile.Profile(); t=time.time(); pr.enable(); r = replay(sc); pr.disable()
print(len(r.rebalances), time.time()-t)
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(45)
