#!/usr/bin/env python3
"""The documentation's size limits (issue 63): the README is a user guide a newcomer reads in ten minutes,
so at most 300 lines, none over 120 characters outside the blocks that show a command's output (what
the tool prints is shown as it is); every page under docs/ (docs/history/ aside: the record of how
figures were found) at most 400 lines.

    doc_limits_test.py ROOT

Exit status 0 when every limit holds, 1 with one line per breach.
"""
import glob
import os
import sys

README_LINES, README_WIDTH, PAGE_LINES = 300, 120, 400


def readme_breaches(path):
    """Lines past the count, and lines past the width outside output blocks (a fence with no language)."""
    lines = open(path, encoding="utf-8").read().splitlines()
    out = []
    if len(lines) > README_LINES:
        out.append(f"{path}: {len(lines)} lines, more than {README_LINES}; move reference material to docs/")
    fence = None  # the open fence's language ("" for an output block), None outside a block
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
            continue
        if len(line) > README_WIDTH and fence != "":
            out.append(f"{path}:{number}: {len(line)} characters, more than {README_WIDTH}; break the line")
    return out


def page_breaches(root):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        count = len(open(path, encoding="utf-8").read().splitlines())
        if count > PAGE_LINES:
            out.append(f"{os.path.relpath(path, root)}: {count} lines, more than {PAGE_LINES}; "
                       "split the page or move how figures were found to docs/history/")
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    bad = readme_breaches(os.path.join(root, "README.md")) + page_breaches(root)
    for b in bad:
        print(b)
    print(f"documentation limits: {len(bad)} breaches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
