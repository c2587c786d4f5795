# part: heldout-guided, by the name docs/policies.md uses
# It also timed the host's drift (scripts/experiments/host_noise.py), an experiment since deleted.
run_part heldout-guided
