"""Every relative link in the project's Markdown reaches a file, and every #anchor into a Markdown page
a heading of it, by GitHub's rule (lower case, punctuation but - and _ dropped, spaces to -, -1, -2 on
repeats). Links in code are not links. Absolute URLs are not fetched (the build machine is offline).

    doc_links_test.py ROOT
"""
import os
import re
import subprocess
import sys

root = sys.argv[1]
listed = subprocess.run(["git", "-C", root, "ls-files", "*.md"], capture_output=True, text=True)
if listed.returncode == 0:
    files = listed.stdout.split()
else:  # not a clone: the tree, less build outputs and hidden folders
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(".md")]
assert files, "no Markdown files tracked"


def without_fences(text):
    return re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for line in without_fences(open(path, encoding="utf-8").read()).splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = found
    return cache[path]


bad = []
for f in files:
    path = os.path.join(root, f)
    # A heading's inline code is part of its anchor; a link's is not a link.
    text = re.sub(r"`[^`\n]*`", "", without_fences(open(path, encoding="utf-8").read()))
    for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
        link = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            continue
        target, _, anchor = link.partition("#")
        target_path = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(target_path):
            bad.append(f"{f}: {link}: no such file")
        elif anchor and target_path.endswith(".md") and anchor not in anchors(target_path):
            bad.append(f"{f}: {link}: no heading with that anchor")
assert not bad, "\n".join(bad)
print(f"links in {len(files)} Markdown files resolve")
