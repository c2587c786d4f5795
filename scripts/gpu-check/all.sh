# part: everything but perf: base, then max (the default)
run_part base
run_part max
