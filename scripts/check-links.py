#!/usr/bin/env python3
# Used by .ci/run: the READMEs link to each other section by section (the
# front page to the manual in the crates), so a moved heading must fail CI.
"""Check every relative Markdown link in the given files: the target file or
directory exists, and a #anchor names a heading of the target (GitHub's slugs)."""
import os, re, sys

def slugs(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding='utf-8'):
        if line.lstrip().startswith('```'):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
        if not m:
            continue
        text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', m.group(2))  # link text only
        s = text.strip().lower()
        s = re.sub(r'[^\w\- ]', '', s)  # GitHub drops punctuation but keeps - and _
        s = s.replace(' ', '-')
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f'{s}-{n}')
    return out

def links(path):
    fence = False
    for no, line in enumerate(open(path, encoding='utf-8'), 1):
        if line.lstrip().startswith('```'):
            fence = not fence
            continue
        if fence:
            continue
        line = re.sub(r'`[^`]*`(?!\])', lambda m: m.group(0) if '](' in m.group(0) else '', line)
        for m in re.finditer(r'\]\(([^)\s]+)\)', line):
            yield no, m.group(1)

bad = 0
count = 0
for f in sys.argv[1:]:
    for no, target in links(f):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # http:, https:, mailto:
            continue
        count += 1
        file, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(f), file)) if file else f
        if not os.path.exists(dest):
            print(f'{f}:{no}: {target}: no such file {dest}'); bad += 1; continue
        if anchor:
            if os.path.isdir(dest) or not dest.endswith('.md'):
                print(f'{f}:{no}: {target}: anchor on a non-Markdown target'); bad += 1; continue
            if anchor not in slugs(dest):
                print(f'{f}:{no}: {target}: no heading #{anchor} in {dest}'); bad += 1
print(f'{count} relative links checked, {bad} broken')
sys.exit(1 if bad else 0)
