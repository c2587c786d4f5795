#!/usr/bin/env python3
"""A planner in another language, speaking mlaplan's external-planner protocol (docs/external.md).

It is a port of the seed's loop in Python, and the example to start from when checking an engine's
own port with `mlaplan verify --external`:

    mlaplan verify --external "python3 scripts/external/seed_port.py" --fuzz 10000

Each request on stdin is one line `plan P N M B c_0 .. c_{B-1} o_0 .. o_B`; each answer on stdout is
one line `tables <M x (B+1) buffer_row_offsets> <M x B cache_offsets> <M buffer_lengths>`,
`infeasible <smallest max_chunks>` or `error <message>`.

--bug NAME plants a defect, to see how verify reports one:
  off-by-one    reads the input row offsets one sequence late (an engine port's classic slip)
  no-refusal    plans batches past max_chunks instead of refusing them

--page-sizes and --max-chunks make it answer `error` outside those values, as a planner built for
fixed values does (MAX's kernel; see verify's --only-page-sizes and --only-max-chunks).

It also answers the timing requests `bench --max CMD` sends (load, time-hot R, time-cold, unload,
info), timing its own Python loop with the host clock, so the whole protocol can be tried without
a GPU.
"""
import argparse
import sys
import time


def plan(page, n, m, cache, offsets, bug):
    b_count = len(cache)
    lengths = []
    for b in range(b_count):
        i = min(b + 1, b_count - 1) if bug == "off-by-one" else b
        raw = cache[b] + offsets[i + 1] - offsets[i]
        lengths.append((raw + page - 1) // page * page)
    total = sum(lengths)
    last_start = total - lengths[-1] if b_count else 0
    used = (total + n - 1) // n
    need = max(1, used + (1 if b_count and last_start >= used * n else 0))
    if need > m and bug != "no-refusal":
        return f"infeasible {need}"
    rows = [[0] * (b_count + 1) for _ in range(m)]
    cache_offsets = [[0] * b_count for _ in range(m)]
    if b_count == 0:
        return "tables " + " ".join(["0"] * (m + m)) if m else "tables"
    start = 0
    for b in range(b_count):
        start_chunk, processed, left = start // n, 0, lengths[b]
        for c in range(m):
            offset = n if c < start_chunk else (start % n if c == start_chunk else 0)
            rows[c][b] = offset
            cache_offsets[c][b] = processed
            take = min(left, n - offset)
            processed += take
            left -= take
        start += lengths[b]
    end_chunk = (total + n - 1) // n - 1
    buffer_lengths = []
    for c in range(m):
        if c < end_chunk:
            rows[c][b_count], length = n, n
        elif c == end_chunk:
            rows[c][b_count] = length = total - c * n
        else:
            rows[c][b_count], length = 0, -1
        buffer_lengths.append(length)
    cells = [v for row in rows for v in row] + [v for row in cache_offsets for v in row] + buffer_lengths
    return "tables " + " ".join(map(str, cells))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bug", choices=["off-by-one", "no-refusal"], help="plant a defect")
    parser.add_argument("--page-sizes", help="comma-separated: the only page sizes it plans")
    parser.add_argument("--max-chunks", help="comma-separated: the only max_chunks it plans")
    args = parser.parse_args()
    only_pages = {int(v) for v in args.page_sizes.split(",")} if args.page_sizes else None
    only_chunks = {int(v) for v in args.max_chunks.split(",")} if args.max_chunks else None
    loaded = []
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] in ("plan", "load"):
                page, n, m, b_count = map(int, words[1:5])
                values = list(map(int, words[5:]))
                if len(values) != 2 * b_count + 1:
                    raise ValueError(f"{len(values)} numbers after B, expected {2 * b_count + 1}")
                if (only_pages and page not in only_pages) or (only_chunks and m not in only_chunks):
                    raise ValueError(f"not built for page_size={page} max_chunks={m}")
                batch = (page, n, m, values[:b_count], values[b_count:], args.bug)
                if words[0] == "plan":
                    answer = plan(*batch)
                else:
                    loaded.append(batch)
                    answer = f"loaded {len(loaded)}"
            elif words[0] in ("time-hot", "time-cold"):
                if not loaded:
                    raise ValueError(f"{words[0]} before load")
                count = int(words[1]) if words[0] == "time-hot" else 1
                start = time.perf_counter_ns()
                for i in range(count):
                    plan(*loaded[i % len(loaded)])
                answer = f"elapsed {time.perf_counter_ns() - start}"
            elif words[0] == "unload":
                loaded.clear()
                answer = "unloaded"
            elif words[0] == "info":
                answer = "info the seed's loop in Python (scripts/external/seed_port.py), host clock"
            else:
                raise ValueError(f"unknown request {words[0]!r}")
        except (ValueError, IndexError) as e:
            answer = f"error {e}"
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
