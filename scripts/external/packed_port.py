#!/usr/bin/env python3
"""A port of vLLM's packed split (plan_mla_context_chunks, PR 50613), checked by mlaplan's fuzzer.

What an engine team would write to check its own port of a chunking policy: the policy's loop, and
the few lines of mlaplan's external-planner protocol around it (docs/external.md):

    mlaplan verify --external "python3 scripts/external/packed_port.py" --policy packed --fuzz 10000

Each request on stdin is one line `plan packed P N M B c_0 .. c_{B-1} o_0 .. o_B` (page size, buffer
rows, max_chunks, batch size, cached context lengths, input row offsets); each answer on stdout is
one line `tables <R x (B+1) buffer_row_offsets> <R x B cache_offsets> <R buffer_lengths>` with
R = max(M, chunks), or `infeasible` where vLLM would refuse the batch (a buffer below one page).

--bug NAME plants a defect, to see the gate catch it:
  unaligned    splits a context at the rows left, forgetting to round the split down to a page
  skip-empty   skips a request without context instead of ending the chunk there (TensorRT-LLM's rule)
"""
import argparse
import sys
from itertools import accumulate
from operator import add


def plan_context_chunks(context_lens, workspace, align, bug):
    """The chunks, each a list of (request, first token, tokens): contexts packed in request order
    into at most `workspace` rows; a context that does not fit is split at a multiple of `align`
    (never taking its whole rest), and a request without context ends the chunk."""
    max_context_chunk = workspace // align * align
    if max_context_chunk == 0:
        return None  # vLLM asserts max_context_chunk > 0
    chunks, req, start = [], 0, 0
    while req < len(context_lens):
        if context_lens[req] == 0:
            req += 1
            continue
        pieces, rows = [], 0
        while req < len(context_lens) and (context_lens[req] > 0 or bug == "skip-empty"):
            remaining = context_lens[req] - start
            if rows + remaining > workspace:
                limit = min(max_context_chunk, (remaining - 1) // align * align)
                split = min(limit, workspace - rows)
                if bug != "unaligned":
                    split = split // align * align
                if split > 0:
                    pieces.append((req, start, split))
                    start += split
                break
            if remaining:
                pieces.append((req, start, remaining))
            rows += remaining
            req, start = req + 1, 0
        chunks.append(pieces)
    return chunks


def tables(chunks, batch_size, max_chunks):
    """The chunks as the three tables, row-major by chunk: R = max(max_chunks, chunks) rows, an unused
    chunk with length -1 and every sequence's offset at its end."""
    rows = max(max_chunks, len(chunks))
    row_offsets, cache_offsets, lengths = [], [], []
    streamed = [0] * batch_size
    for c in range(rows):
        take = [0] * batch_size
        for req, _, tokens in chunks[c] if c < len(chunks) else []:
            take[req] = tokens
        row_offsets += accumulate(take, initial=0)  # each sequence's rows follow the ones before it
        cache_offsets += streamed
        streamed = list(map(add, streamed, take))
        lengths.append(row_offsets[-1] if c < len(chunks) else -1)
    return "tables " + " ".join(map(str, row_offsets + cache_offsets + lengths))


def answer(words, bug):
    if len(words) < 2 or words[0] != "plan" or words[1] != "packed":
        raise ValueError("this port plans policy packed only: run verify with --policy packed")
    page, n, m, b_count = map(int, words[2:6])
    values = list(map(int, words[6:]))
    if len(values) != 2 * b_count + 1:
        raise ValueError(f"{len(values)} numbers after B, expected {2 * b_count + 1}")
    # Only the cached context streams through the buffer; the input offsets are not needed here.
    chunks = plan_context_chunks(values[:b_count], n, page, bug)
    return "infeasible" if chunks is None else tables(chunks, b_count, m)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bug", choices=["unaligned", "skip-empty"], help="plant a defect")
    args = parser.parse_args()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            reply = answer(words, args.bug)
        except (ValueError, IndexError) as e:
            reply = f"error {e}"
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
